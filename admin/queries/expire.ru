# expire: move session $s from state $from (active or suspended) to
# "expired", recording the trails:StateChange activity $act (Expire puts
# the new trails:state and the PROV record where the DATA comment stands),
# only if $s is stored, its state is still $from and its trails:expiresAt
# is at or before $now. Like every move to a terminal state, it first flags
# the descendants of $s that are active or suspended for cancellation,
# under the same condition. Expire sends one such pair of operations per
# session of a batch, in one request: one transaction.
PREFIX trails: <https://w3id.org/trails/ns#>
INSERT { GRAPH ?d { ?d trails:cancelRequested true ; trails:cancelRequestedBy $act } }
WHERE {
  GRAPH $s { $s a trails:Session ; trails:expiresAt ?expires . OPTIONAL { $s trails:state ?old } }
  FILTER(COALESCE(?old, "active") = $from && ?expires <= $now)
  ?d trails:parentSession+ $s .
  GRAPH ?d { ?d a trails:Session . OPTIONAL { ?d trails:state ?dstate } }
  FILTER(COALESCE(?dstate, "active") IN ("active", "suspended"))
} ;
PREFIX trails: <https://w3id.org/trails/ns#>
DELETE { GRAPH $s { $s trails:state ?old } }
INSERT {
  #DATA
}
WHERE {
  GRAPH $s { $s a trails:Session ; trails:expiresAt ?expires . OPTIONAL { $s trails:state ?old } }
  FILTER(COALESCE(?old, "active") = $from && ?expires <= $now)
}
