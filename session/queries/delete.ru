# delete: remove the sessions of a batch, $sessions (a VALUES clause of
# ?s): each one's graph, and its triples and turns in any other graph but
# the PROV graph $prov; then record their deletions in PROV where the DATA
# comment stands. Every operation holds only while no session outside the
# batch names one of the batch as its parent ($guard and $members: VALUES
# clauses of ?b and ?m holding the same sessions). No operation changes
# that, so the batch is deleted and recorded whole or not at all: one
# request, one transaction. A batch may hold a fork with its parent, or a
# whole parent cycle. (The table stands in each branch of the UNION: a BIND
# of ?s outside its scope would bind nothing and match every triple.)
PREFIX trails: <https://w3id.org/trails/ns#>
DELETE { GRAPH ?s { ?x ?p ?o } }
WHERE {
  FILTER NOT EXISTS {
    $guard
    ?child trails:parentSession ?b .
    FILTER NOT EXISTS { $members FILTER(?m = ?child) }
  }
  $sessions
  GRAPH ?s { ?x ?p ?o }
} ;
DELETE { GRAPH ?g { ?x ?p ?o } }
WHERE {
  FILTER NOT EXISTS {
    $guard
    ?child trails:parentSession ?b .
    FILTER NOT EXISTS { $members FILTER(?m = ?child) }
  }
  { $sessions BIND(?s AS ?x) } UNION { $sessions ?x trails:session ?s }
  GRAPH ?g { ?x ?p ?o }
  FILTER(?g != $prov)
} ;
INSERT {
  #DATA
}
WHERE {
  FILTER NOT EXISTS {
    $guard
    ?child trails:parentSession ?b .
    FILTER NOT EXISTS { $members FILTER(?m = ?child) }
  }
}
