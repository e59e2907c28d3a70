# set-expiry: replace the trails:expiresAt of session $s with the one
# SetExpiry puts where the DATA comment stands (nothing there: clear it),
# only if $s is stored and active or suspended (no trails:state means
# active): a session in a terminal state keeps its expiry.
PREFIX trails: <https://w3id.org/trails/ns#>
DELETE { GRAPH $s { $s trails:expiresAt ?old } }
INSERT {
  #DATA
}
WHERE {
  GRAPH $s { $s a trails:Session . OPTIONAL { $s trails:expiresAt ?old } OPTIONAL { $s trails:state ?state } }
  FILTER(COALESCE(?state, "active") IN ("active", "suspended"))
}
