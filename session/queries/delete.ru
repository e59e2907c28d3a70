# delete: remove session $s (its graph, and its triples and turns in any
# other graph but the PROV graph $prov), only while no session names it as
# parent; then record the deletion in PROV where the DATA comment stands.
# One request, one transaction.
PREFIX trails: <https://w3id.org/trails/ns#>
DELETE { GRAPH $s { ?x ?p ?o } }
WHERE {
  FILTER NOT EXISTS { ?child trails:parentSession $s }
  GRAPH $s { ?x ?p ?o }
} ;
DELETE { GRAPH ?g { ?x ?p ?o } }
WHERE {
  FILTER NOT EXISTS { ?child trails:parentSession $s }
  { BIND($s AS ?x) } UNION { ?x trails:session $s }
  GRAPH ?g { ?x ?p ?o }
  FILTER(?g != $prov)
} ;
INSERT {
  #DATA
}
WHERE {
  FILTER NOT EXISTS { $s a trails:Session }
  FILTER NOT EXISTS { ?child trails:parentSession $s }
}
