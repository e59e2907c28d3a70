# append: add turns to session $s only if it still holds $own turns with
# head digest $head (compare and swap), replacing the count and digest.
# Never to a session in a terminal state (completed, failed, expired), and
# only if $s was rewound $gen times (trails:rewinds, absent: 0), as the
# writer's value knows: a value loaded before a rewind must not append.
# Persist puts the new turns, count and digest where the DATA comment
# stands.
PREFIX trails: <https://w3id.org/trails/ns#>
DELETE { GRAPH $s { $s trails:ownTurns ?n ; trails:headDigest ?h } }
INSERT {
  #DATA
}
WHERE {
  GRAPH $s { $s trails:ownTurns ?n ; trails:headDigest ?h }
  FILTER(?n = $own && ?h = $head)
  OPTIONAL { GRAPH $s { $s trails:rewinds ?k } }
  FILTER(COALESCE(?k, 0) = $gen)
  FILTER NOT EXISTS { GRAPH $s { $s trails:state ?st } FILTER(?st IN ("completed", "failed", "expired")) }
}
