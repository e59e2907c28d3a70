# create-root: create root session $s, unless it is stored already. Persist
# puts the session's quads (metadata, turns, turn count, head digest) where
# the DATA comment stands.
PREFIX trails: <https://w3id.org/trails/ns#>
INSERT {
  #DATA
}
WHERE { FILTER NOT EXISTS { $s a trails:Session } }
