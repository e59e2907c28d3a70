# untag: remove the tags in $tags (a VALUES clause of ?tag) from session
# $s. Removing a tag it does not have changes nothing.
PREFIX trails: <https://w3id.org/trails/ns#>
DELETE { GRAPH $s { $s trails:tag ?tag } }
WHERE {
  $tags
  GRAPH $s { $s trails:tag ?tag }
}
