# create-root: create root session $s, unless it is stored already. Persist
# puts the session's quads (metadata, turns, turn count, head digest) where
# the DATA comment stands.
# Contents too long for the SPARQL parser arrive as variables: the
# writer puts their patterns where the STAGED comment stands (a staging
# graph sent ahead through the Graph Store, dropped after this update in
# the same request; session/staging.go).
PREFIX trails: <https://w3id.org/trails/ns#>
PREFIX prov:   <http://www.w3.org/ns/prov#>
INSERT {
  #DATA
}
WHERE {
  FILTER NOT EXISTS { $s a trails:Session }
  FILTER NOT EXISTS { ?deleted a trails:Deletion ; prov:invalidated $s }
  #STAGED
}
