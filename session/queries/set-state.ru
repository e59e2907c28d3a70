# set-state: move session $s from state $from to state $to, recording the
# trails:StateChange activity $act (SetState puts the new trails:state and
# the PROV record where the DATA comment stands), only if $s is stored and
# its state is still $from (a session without trails:state is "active"):
# a compare and swap on the state, so of two writers racing one applies.
# When $to is terminal (completed, failed, expired), the first operation
# flags every descendant of $s (trails:parentSession+) that is active or
# suspended for cancellation, pointing at $act, and names each in the PROV
# graph ($act trails:flagged ?d), where the record outlives the session (a
# Delete racing SetState may take the fork before SetState reads which
# sessions it flagged); it runs before the second changes the state, under
# the same condition. One request, one
# transaction. The prologue comes once, at the start: SPARQL 1.1 allows
# one after the ";" too, but Oxigraph refuses it.
PREFIX trails: <https://w3id.org/trails/ns#>
INSERT {
  GRAPH ?d { ?d trails:cancelRequested true ; trails:cancelRequestedBy $act }
  GRAPH <https://w3id.org/trails/graph/prov> { $act trails:flagged ?d }
}
WHERE {
  FILTER($to IN ("completed", "failed", "expired"))
  GRAPH $s { $s a trails:Session . OPTIONAL { $s trails:state ?old } }
  FILTER(COALESCE(?old, "active") = $from)
  ?d trails:parentSession+ $s .
  GRAPH ?d { ?d a trails:Session . OPTIONAL { ?d trails:state ?dstate } }
  FILTER(COALESCE(?dstate, "active") IN ("active", "suspended"))
} ;
DELETE { GRAPH $s { $s trails:state ?old } }
INSERT {
  #DATA
}
WHERE {
  GRAPH $s { $s a trails:Session . OPTIONAL { $s trails:state ?old } }
  FILTER(COALESCE(?old, "active") = $from)
}
