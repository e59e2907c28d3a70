# expire: move session $s from state $from (active or suspended) to
# "expired", recording the trails:StateChange activity $act (Expire puts
# the new trails:state and the PROV record where the DATA comment stands),
# only if $s is stored, its state is still $from and its trails:expiresAt
# is at or before $now. Like every move to a terminal state, it first flags
# the descendants of $s that are active or suspended for cancellation
# (naming each in the PROV graph: $act trails:flagged ?d), under the same
# condition. Expire sends one such pair of operations per
# session of a batch, in one request: one transaction. Its IRIs are
# written out, with no PREFIX: the copies of a batch are joined with ";",
# and a prologue after a ";" (valid SPARQL 1.1) is refused by Oxigraph.
INSERT { GRAPH ?d { ?d <https://w3id.org/trails/ns#cancelRequested> true ; <https://w3id.org/trails/ns#cancelRequestedBy> $act } GRAPH <https://w3id.org/trails/graph/prov> { $act <https://w3id.org/trails/ns#flagged> ?d } }
WHERE {
  GRAPH $s { $s a <https://w3id.org/trails/ns#Session> ; <https://w3id.org/trails/ns#expiresAt> ?expires . OPTIONAL { $s <https://w3id.org/trails/ns#state> ?old } }
  FILTER(COALESCE(?old, "active") = $from && ?expires <= $now)
  ?d <https://w3id.org/trails/ns#parentSession>+ $s .
  GRAPH ?d { ?d a <https://w3id.org/trails/ns#Session> . OPTIONAL { ?d <https://w3id.org/trails/ns#state> ?dstate } }
  FILTER(COALESCE(?dstate, "active") IN ("active", "suspended"))
} ;
DELETE { GRAPH $s { $s <https://w3id.org/trails/ns#state> ?old } }
INSERT {
  #DATA
}
WHERE {
  GRAPH $s { $s a <https://w3id.org/trails/ns#Session> ; <https://w3id.org/trails/ns#expiresAt> ?expires . OPTIONAL { $s <https://w3id.org/trails/ns#state> ?old } }
  FILTER(COALESCE(?old, "active") = $from && ?expires <= $now)
}
