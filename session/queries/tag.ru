# tag: add the tags in $tags (a VALUES clause of ?tag) to session $s, in
# its graph, only if $s is stored there. Adding a tag it has changes
# nothing (a graph holds a triple once).
PREFIX trails: <https://w3id.org/trails/ns#>
INSERT { GRAPH $s { $s trails:tag ?tag } }
WHERE {
  GRAPH $s { $s a trails:Session }
  $tags
}
