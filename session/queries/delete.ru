# delete: remove the sessions of a batch, $sessions (a VALUES clause of
# ?s): record their deletions in PROV where the DATA comment stands, then
# remove their triples and turns in any other graph but the PROV graph
# $prov, then each one's graph. Every operation holds only while each
# session of the batch is still stored ($stored of them, a trails:Session
# in its graph: of Deletes racing on one session, one deletes it and
# records it, the others change nothing), each still hangs under the
# session the Delete names by the fork links it had when the Delete read
# its tree ($linked of them, $links a VALUES clause of ?l ?lp: a session
# detached meanwhile, or one below it, is no longer the Delete's to
# delete), and no session outside the batch names one of the batch as its
# parent (?blocking = 0; $guard and $members are VALUES clauses of ?b and
# ?m holding the same sessions). The
# operations run in that order so that none changes what the guard reads
# before the last (the PROV record is outside the sessions' graphs, the
# second leaves those graphs to the third), so the batch is deleted and
# recorded whole or not at all: one request, one transaction. A batch may
# hold a fork with its parent, or a whole parent cycle. The guards are
# sub-selects, counted once per operation: as a FILTER NOT EXISTS of the
# group, Jena evaluated it again for every triple deleted (21 s for a
# batch of 200 forks). The table stands in each branch of the UNION: a
# BIND of ?s outside its scope would bind nothing and match every triple.
PREFIX trails: <https://w3id.org/trails/ns#>
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
  {
    SELECT (COUNT(DISTINCT ?m) AS ?present) WHERE {
      $members
      GRAPH ?m { ?m a trails:Session }
    }
  }
  FILTER(?present = $stored)
  {
    SELECT (COUNT(*) AS ?held) WHERE {
      SELECT DISTINCT ?l ?lp WHERE { $links ?l trails:parentSession ?lp . }
    }
  }
  FILTER(?held = $linked)
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
  {
    SELECT (COUNT(DISTINCT ?m) AS ?present) WHERE {
      $members
      GRAPH ?m { ?m a trails:Session }
    }
  }
  FILTER(?present = $stored)
  {
    SELECT (COUNT(*) AS ?held) WHERE {
      SELECT DISTINCT ?l ?lp WHERE { $links ?l trails:parentSession ?lp . }
    }
  }
  FILTER(?held = $linked)
  { $sessions BIND(?s AS ?x) } UNION { $sessions ?x trails:session ?s }
  GRAPH ?g { ?x ?p ?o }
  FILTER(?g != $prov && ?g != ?s)
} ;
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
  {
    SELECT (COUNT(DISTINCT ?m) AS ?present) WHERE {
      $members
      GRAPH ?m { ?m a trails:Session }
    }
  }
  FILTER(?present = $stored)
  {
    SELECT (COUNT(*) AS ?held) WHERE {
      SELECT DISTINCT ?l ?lp WHERE { $links ?l trails:parentSession ?lp . }
    }
  }
  FILTER(?held = $linked)
  $sessions
  GRAPH ?s { ?x ?p ?o }
}
