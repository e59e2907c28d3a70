# append: add turns to session $s only if it still holds $own turns with
# head digest $head (compare and swap), replacing the count and digest.
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
}
