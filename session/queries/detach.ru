# detach: turn fork $s of $parent (forked at $at, holding $own turns with
# head digest $head) into a root: drop its parent link and fork point and
# replace its count and digest, only if all four are still as read. Detach
# puts the copied prefix, the new count and digest and the PROV record where
# the DATA comment stands. prov:wasDerivedFrom stays. $unlink is a VALUES
# clause of (?ut ?uc): the links of the fork's own tool results to calls
# in the copied prefix (?ut prov:wasGeneratedBy ?uc), deleted here while
# the DATA links each to the copy of its call.
# Long contents are copied inside the store: the writer puts patterns
# binding them from the original turns (checked by SHA-256) where the
# STAGED comment stands (session/staging.go).
PREFIX trails: <https://w3id.org/trails/ns#>
PREFIX prov:   <http://www.w3.org/ns/prov#>
DELETE {
  GRAPH $s { $s trails:parentSession ?p ; trails:forkedAtIndex ?at ;
                trails:ownTurns ?n ; trails:headDigest ?h .
             ?ut prov:wasGeneratedBy ?uc }
}
INSERT {
  #DATA
}
WHERE {
  GRAPH $s { $s trails:parentSession ?p ; trails:forkedAtIndex ?at ;
                trails:ownTurns ?n ; trails:headDigest ?h }
  FILTER(?p = $parent && ?at = $at && ?n = $own && ?h = $head)
  OPTIONAL { $unlink }
  #STAGED
}
