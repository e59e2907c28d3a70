# create-fork: create fork $s of $parent with branch label $branch, and its
# PROV record, only if $s is not stored yet, $parent is stored, and no other
# session uses $branch. Persist puts the quads where the DATA comment stands.
# On a sharded cluster a label is unique within a replica group: sessions
# whose trails:group (absent: 0) differs from $parent's do not count, so
# that the audit replica, which holds every group, decides as the group.
# The tree limits of design note 002 hold inside the update, so that of forks racing
# for the last free place exactly one lands: $parent is not a worker, and it
# has fewer than $max forks ($max <= 0: no limit; archives made by a rewind,
# with trails:rewoundFrom, do not count). And the fork point $at lies within
# $parent's history as stored now (its fork point plus trails:ownTurns), so
# that a fork racing a Rewind of $parent never hangs beyond its end.
# And the prefix is the one the fork's author saw: the turn at index $k
# (the fork point minus one; -1 for a fork at 0, which inherits nothing)
# of $parent's effective history carries trails:digest $base, the chain
# digest the author computed, which stands for the whole prefix. That turn
# lies in the nearest session of $parent's chain ($parent itself or an
# ancestor) whose fork point is at most $k; found by the digest, it costs
# the same whatever the history's length.
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
  $parent a trails:Session .
  FILTER NOT EXISTS {
    ?other a trails:Session ; trails:branch $branch .
    OPTIONAL { ?other trails:group ?og }
    OPTIONAL { $parent trails:group ?pg }
    FILTER(COALESCE(?og, 0) = COALESCE(?pg, 0))
  }
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
  FILTER($k < 0 || EXISTS {
    $parent trails:parentSession* ?holder .
    GRAPH ?holder { ?bt trails:digest $base ; trails:index $k ; trails:session ?holder }
    FILTER NOT EXISTS {
      $parent trails:parentSession* ?near .
      ?near trails:parentSession+ ?holder .
      OPTIONAL { ?near trails:forkedAtIndex ?nat }
      FILTER(COALESCE(?nat, 0) <= $k)
    }
  })
  #STAGED
}
