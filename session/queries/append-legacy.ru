# append-legacy: add turns, a turn count and a head digest to session $s,
# stored before Trails kept them, only if it still has none and no turn at
# index $next or beyond, and never to a session in a terminal state
# (completed, failed, expired). Persist puts the quads where the DATA
# comment stands.
PREFIX trails: <https://w3id.org/trails/ns#>
INSERT {
  #DATA
}
WHERE {
  $s a trails:Session .
  FILTER NOT EXISTS { $s trails:ownTurns ?any }
  FILTER NOT EXISTS { ?t trails:session $s ; trails:index ?i . FILTER(?i >= $next) }
  FILTER NOT EXISTS { GRAPH $s { $s trails:state ?st } FILTER(?st IN ("completed", "failed", "expired")) }
}
