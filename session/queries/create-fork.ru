# create-fork: create fork $s of $parent with branch label $branch, and its
# PROV record, only if $s is not stored yet, $parent is stored, and no other
# session uses $branch. Persist puts the quads where the DATA comment stands.
PREFIX trails: <https://w3id.org/trails/ns#>
PREFIX prov:   <http://www.w3.org/ns/prov#>
INSERT {
  #DATA
}
WHERE {
  FILTER NOT EXISTS { $s a trails:Session }
  FILTER NOT EXISTS { ?deleted a trails:Deletion ; prov:invalidated $s }
  $parent a trails:Session .
  FILTER NOT EXISTS { ?other a trails:Session ; trails:branch $branch }
}
