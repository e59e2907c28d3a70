# create-fork: create fork $s of $parent with branch label $branch, and its
# PROV record, only if $s is not stored yet, $parent is stored, and no other
# session uses $branch. Persist puts the quads where the DATA comment stands.
# The tree limits of seed 002 hold inside the update, so that of forks racing
# for the last free place exactly one lands: $parent is not a worker, and it
# has fewer than $max forks ($max <= 0: no limit; archives made by a rewind,
# with trails:rewoundFrom, do not count). And the fork point $at lies within
# $parent's history as stored now (its fork point plus trails:ownTurns), so
# that a fork racing a Rewind of $parent never hangs beyond its end.
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
  FILTER NOT EXISTS { $parent trails:kind "worker" }
  {
    SELECT (COUNT(DISTINCT ?child) AS ?children) WHERE {
      ?child trails:parentSession $parent .
      FILTER NOT EXISTS { ?child trails:rewoundFrom ?archived }
    }
  }
  FILTER($max <= 0 || ?children < $max)
  FILTER NOT EXISTS {
    $parent trails:ownTurns ?pown .
    OPTIONAL { $parent trails:forkedAtIndex ?pat }
    FILTER(COALESCE(?pat, 0) + ?pown < $at)
  }
}
