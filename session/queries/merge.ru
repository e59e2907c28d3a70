# merge: append the merge turn carrying the result of child $child to its
# parent $s, only if $s still holds $own turns with head digest $head and
# was rewound $gen times (compare and swap, as append.ru), no Merge
# activity in the PROV graph
# $prov used $child yet (a child is merged once), and $s is not completed,
# failed or expired; the count and digest are replaced. Merge puts the
# turn, its result, the new count and digest and the PROV record where the
# DATA comment stands. The chain head is checked as in append.ru: the turn
# of $s at index $pi carries trails:digest $prev (or none, if stored before
# the hash chain). $s's fork fields are those Merge read, as in
# append.ru ($forkOf, $forkAt). And $child must still hang under $s at
# $first: a rewind of $s below that point moves the child under its
# archive. And $child must still hold the own turns Merge read ($cown of
# them, the range the merge turn names; unchecked for a child stored
# before Trails counted turns) and have been rewound $cgen times: a
# Rewind of the child (which takes own turns and counts itself) or an
# append to it since the read must not go unseen.
PREFIX trails: <https://w3id.org/trails/ns#>
PREFIX prov:   <http://www.w3.org/ns/prov#>
DELETE { GRAPH $s { $s trails:ownTurns ?n ; trails:headDigest ?h } }
INSERT {
  #DATA
}
WHERE {
  GRAPH $s { $s trails:ownTurns ?n ; trails:headDigest ?h }
  FILTER(?n = $own && ?h = $head)
  FILTER NOT EXISTS { GRAPH $s { ?pt trails:index $pi ; trails:digest ?pd } FILTER(?pd != $prev) }
  OPTIONAL { GRAPH $s { $s trails:rewinds ?k } }
  FILTER(COALESCE(?k, 0) = $gen)
  FILTER NOT EXISTS { GRAPH $prov { ?merged a trails:Merge ; prov:used $child } }
  GRAPH $child { $child trails:parentSession $s ; trails:forkedAtIndex ?cat }
  FILTER(?cat = $first)
  OPTIONAL { GRAPH $child { $child trails:ownTurns ?cn } }
  OPTIONAL { GRAPH $child { $child trails:rewinds ?ck } }
  FILTER((!BOUND(?cn) || ?cn = $cown) && COALESCE(?ck, 0) = $cgen)
  FILTER NOT EXISTS { GRAPH $s { $s trails:state ?st } FILTER(?st IN ("completed", "failed", "expired")) }
  OPTIONAL { GRAPH $s { $s trails:parentSession ?up } }
  OPTIONAL { GRAPH $s { $s trails:forkedAtIndex ?upAt } }
  FILTER(COALESCE(STR(?up), "") = $forkOf && COALESCE(?upAt, 0) = $forkAt)
}
