# append-legacy: add turns, a turn count and a head digest to session $s,
# stored before Trails kept them, only if it still has none and no turn at
# index $next or beyond, and never to a session in a terminal state
# (completed, failed, expired). Persist puts the quads where the DATA
# comment stands.
# Contents too long for the SPARQL parser arrive as variables: the
# writer puts their patterns where the STAGED comment stands (a staging
# graph sent ahead through the Graph Store, dropped after this update in
# the same request; session/staging.go).
PREFIX trails: <https://w3id.org/trails/ns#>
INSERT {
  #DATA
}
WHERE {
  $s a trails:Session .
  FILTER NOT EXISTS { $s trails:ownTurns ?any }
  FILTER NOT EXISTS { ?t trails:session $s ; trails:index ?i . FILTER(?i >= $next) }
  FILTER NOT EXISTS { GRAPH $s { $s trails:state ?st } FILTER(?st IN ("completed", "failed", "expired")) }
  #STAGED
}
