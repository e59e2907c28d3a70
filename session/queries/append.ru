# append: add turns to session $s only if it still holds $own turns with
# head digest $head (compare and swap), replacing the count and digest.
# Never to a session in a terminal state (completed, failed, expired), and
# only if $s was rewound $gen times (trails:rewinds, absent: 0), as the
# writer's value knows: a value loaded before a rewind must not append.
# The chain head too: the session's turn at index $pi (its last stored
# turn; -1 when it holds none) carries trails:digest $prev, as the
# writer's history says (a turn stored before the hash chain has none and
# passes). And its fork fields: $s hangs under the session whose IRI is
# $forkOf at index $forkAt ("" and 0 for a root), as the writer's value
# says: a Rewind of the parent that moved $s under its archive, or a
# Detach, since the value was read must not go unseen. Persist puts the
# new turns, count and digest where the DATA comment stands.
# Contents too long for the SPARQL parser arrive as variables: the
# writer puts their patterns where the STAGED comment stands (a staging
# graph sent ahead through the Graph Store, dropped after this update in
# the same request; session/staging.go).
PREFIX trails: <https://w3id.org/trails/ns#>
DELETE { GRAPH $s { $s trails:ownTurns ?n ; trails:headDigest ?h } }
INSERT {
  #DATA
}
WHERE {
  GRAPH $s { $s trails:ownTurns ?n ; trails:headDigest ?h }
  FILTER(?n = $own && ?h = $head)
  FILTER NOT EXISTS { GRAPH $s { ?pt trails:index $pi ; trails:digest ?pd } FILTER(?pd != $prev) }
  OPTIONAL { GRAPH $s { $s trails:rewinds ?k } }
  FILTER(COALESCE(?k, 0) = $gen)
  FILTER NOT EXISTS { GRAPH $s { $s trails:state ?st } FILTER(?st IN ("completed", "failed", "expired")) }
  OPTIONAL { GRAPH $s { $s trails:parentSession ?up } }
  OPTIONAL { GRAPH $s { $s trails:forkedAtIndex ?upAt } }
  FILTER(COALESCE(STR(?up), "") = $forkOf && COALESCE(?upAt, 0) = $forkAt)
  #STAGED
}
