# anchor: name the current position of session $s. Writes anchor $anchor,
# named $name (Anchor puts its type, session, name, creation time and state
# where the DATA comment stands), with the index the store computes here:
# the length of the session's effective history, its fork point plus its
# own turn count (for a session stored before turn counts, its turns
# counted). Only if $s is stored, belongs to principal $scope unless $scope
# is "" (a Store scoped to a principal), and has no anchor named $name yet.
# One request, one transaction: the index cannot interleave with an append.
PREFIX trails:  <https://w3id.org/trails/ns#>
PREFIX dcterms: <http://purl.org/dc/terms/>
INSERT {
  #DATA
  GRAPH $s { $anchor trails:anchorIndex ?index }
}
WHERE {
  GRAPH $s { $s a trails:Session }
  OPTIONAL { $s trails:ownTurns ?own }
  OPTIONAL { $s trails:forkedAtIndex ?at }
  OPTIONAL { $s trails:principal ?agent . ?agent dcterms:identifier ?principal }
  FILTER($scope = "" || ?principal = $scope)
  { SELECT (COUNT(DISTINCT ?t) AS ?counted) WHERE { ?t trails:session $s } }
  BIND(COALESCE(?at, 0) + COALESCE(?own, ?counted) AS ?index)
  FILTER NOT EXISTS { ?other trails:anchorOf $s ; trails:anchorName $name }
}
