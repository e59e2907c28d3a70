# delete: remove the sessions of a batch, $sessions (a VALUES clause of
# ?s): each one's graph, and its triples and turns in any other graph but
# the PROV graph $prov; then record their deletions in PROV where the DATA
# comment stands. Every operation holds only while no session outside the
# batch names one of the batch as its parent (?blocking = 0; $guard and
# $members are VALUES clauses of ?b and ?m holding the same sessions). No
# operation changes that, so the batch is deleted and recorded whole or not
# at all: one request, one transaction. A batch may hold a fork with its
# parent, or a whole parent cycle. The guard is a sub-select, counted once
# per operation: as a FILTER NOT EXISTS of the group, Jena evaluated it
# again for every triple deleted (21 s for a batch of 200 forks). The
# table stands in each branch of the UNION: a BIND of ?s outside its
# scope would bind nothing and match every triple.
PREFIX trails: <https://w3id.org/trails/ns#>
DELETE { GRAPH ?s { ?x ?p ?o } }
WHERE {
  {
    SELECT (COUNT(DISTINCT ?child) AS ?blocking) WHERE {
      $guard
      ?child trails:parentSession ?b .
      FILTER NOT EXISTS { $members FILTER(?m = ?child) }
    }
  }
  FILTER(?blocking = 0)
  $sessions
  GRAPH ?s { ?x ?p ?o }
} ;
DELETE { GRAPH ?g { ?x ?p ?o } }
WHERE {
  {
    SELECT (COUNT(DISTINCT ?child) AS ?blocking) WHERE {
      $guard
      ?child trails:parentSession ?b .
      FILTER NOT EXISTS { $members FILTER(?m = ?child) }
    }
  }
  FILTER(?blocking = 0)
  { $sessions BIND(?s AS ?x) } UNION { $sessions ?x trails:session ?s }
  GRAPH ?g { ?x ?p ?o }
  FILTER(?g != $prov)
} ;
INSERT {
  #DATA
}
WHERE {
  {
    SELECT (COUNT(DISTINCT ?child) AS ?blocking) WHERE {
      $guard
      ?child trails:parentSession ?b .
      FILTER NOT EXISTS { $members FILTER(?m = ?child) }
    }
  }
  FILTER(?blocking = 0)
}
