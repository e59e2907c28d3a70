# verify-mark: replace the verified marks of the sessions in $sessions (a
# VALUES clause of ?s) in graph $g (https://w3id.org/trails/graph/verified)
# with those Verify puts where the DATA comment stands: each session's
# trails:verifiedTurns, trails:verifiedHead, trails:verifiedChain (when it
# has own turns), trails:verifiedEntry and trails:verifiedAt. One request,
# one transaction.
PREFIX trails: <https://w3id.org/trails/ns#>
DELETE { GRAPH $g { ?s ?p ?o } }
WHERE {
  $sessions
  GRAPH $g { ?s ?p ?o }
} ;
INSERT DATA {
  #DATA
}
