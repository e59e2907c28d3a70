# rewind: rewind session $s to index $to (design note 004), in one request, so in
# one transaction: all of it or nothing. Five operations:
#
# 1. The compare and swap: only if $s still holds $own turns of its own
#    with head digest $head, has parent $parent ($s itself for a root),
#    fork point $at and $prev rewinds, is not in a terminal state, its forks
#    made beyond $to are exactly those of $forks ($nforks of them), archive
#    $a is not stored and no session of $s's replica group uses its branch
#    label $branch (see create-fork.ru): create
#    archive $a and the PROV records (Rewind puts them where the DATA comment
#    stands), and give $s its new count $keep, digest $keepHead and rewind
#    count $gen.
# 2. Move the structured fields of those turns (parts, tool calls, model
#    invocations, state changes: session/structured.go) into the graph of
#    $a, untouched;
#    only when $s holds structured turns.
#    Then move the turns of $s at index $to and beyond into the graph of $a,
#    untouched but for their trails:session.
# 3. Move the anchors of $s beyond $to into the graph of $a, renamed into
#    $a's IRI space, their trails:anchorOf made $a.
# 4. Re-parent the forks of $forks to $a.
#
# Operations 2 to 4 act only when the first did: $a exists, rewound from
# $s, and $s holds what the first wrote (so that a repeated request, after
# a lost answer, changes nothing more).
PREFIX trails: <https://w3id.org/trails/ns#>
PREFIX prov:   <http://www.w3.org/ns/prov#>

DELETE { GRAPH $s { $s trails:ownTurns ?n ; trails:headDigest ?h ; trails:rewinds ?k } }
INSERT {
  #DATA
  GRAPH $s { $s trails:ownTurns $keep ; trails:headDigest $keepHead ; trails:rewinds $gen }
}
WHERE {
  GRAPH $s { $s a trails:Session ; trails:ownTurns ?n ; trails:headDigest ?h }
  FILTER(?n = $own && ?h = $head)
  OPTIONAL { GRAPH $s { $s trails:rewinds ?k } }
  FILTER(COALESCE(?k, 0) = $prev)
  OPTIONAL { GRAPH $s { $s trails:parentSession ?p } }
  FILTER(COALESCE(?p, $s) = $parent)
  OPTIONAL { GRAPH $s { $s trails:forkedAtIndex ?at } }
  FILTER(COALESCE(?at, 0) = $at)
  FILTER NOT EXISTS { GRAPH $s { $s trails:state ?st } FILTER(?st IN ("completed", "failed", "expired")) }
  FILTER NOT EXISTS { $a a trails:Session }
  FILTER NOT EXISTS {
    ?other a trails:Session ; trails:branch $branch .
    OPTIONAL { ?other trails:group ?og }
    OPTIONAL { $s trails:group ?sg }
    FILTER(COALESCE(?og, 0) = COALESCE(?sg, 0))
  }
  {
    SELECT (COUNT(DISTINCT ?c) AS ?forks) WHERE {
      ?c trails:parentSession $s ; trails:forkedAtIndex ?cat .
      FILTER(?cat > $to)
    }
  }
  FILTER(?forks = $nforks)
  FILTER NOT EXISTS {
    $forks
    FILTER NOT EXISTS { ?c trails:parentSession $s ; trails:forkedAtIndex ?cat2 . FILTER(?cat2 > $to) }
  }
} ;

# The structured fields of the moved turns (their parts, tool calls, model
# invocations and state changes, resources of their own under the turn's
# IRI) move
# with them, untouched; asked before the turns move, while they still say
# trails:session $s.
DELETE { GRAPH $s { ?x ?p ?o } }
INSERT { GRAPH $a { ?x ?p ?o } }
WHERE {
  GRAPH $a { $a trails:rewoundFrom $s }
  GRAPH $s {
    $s trails:rewinds $gen ; trails:ownTurns $keep ; trails:headDigest $keepHead ; trails:structuredTurns true .
    ?t trails:session $s ; trails:index ?i .
    FILTER(?i >= $to)
    { ?x trails:partOf ?t }
    UNION { ?t prov:wasGeneratedBy ?x . ?x a trails:ModelInvocation }
    UNION { ?part trails:partOf ?t . ?x prov:used ?part ; a trails:ToolCall }
    UNION { ?t trails:changes ?x }
    ?x ?p ?o .
  }
} ;

DELETE { GRAPH $s { ?t ?p ?o } }
INSERT { GRAPH $a { ?t ?p ?o2 } }
WHERE {
  GRAPH $a { $a trails:rewoundFrom $s }
  GRAPH $s {
    $s trails:rewinds $gen ; trails:ownTurns $keep ; trails:headDigest $keepHead .
    ?t trails:session $s ; trails:index ?i .
    FILTER(?i >= $to)
    ?t ?p ?o .
  }
  BIND(IF(?p = trails:session, $a, ?o) AS ?o2)
} ;

DELETE { GRAPH $s { ?an ?p ?o } }
INSERT { GRAPH $a { ?moved ?p ?o2 } }
WHERE {
  GRAPH $a { $a trails:rewoundFrom $s }
  GRAPH $s {
    $s trails:rewinds $gen ; trails:ownTurns $keep ; trails:headDigest $keepHead .
    ?an trails:anchorOf $s ; trails:anchorIndex ?ai .
    FILTER(?ai > $to)
    ?an ?p ?o .
  }
  BIND(IF(?p = trails:anchorOf, $a, ?o) AS ?o2)
  BIND(IF(STRSTARTS(STR(?an), CONCAT(STR($s), "/")), IRI(CONCAT(STR($a), STRAFTER(STR(?an), STR($s)))), ?an) AS ?moved)
} ;

DELETE { GRAPH ?c { ?c trails:parentSession $s } }
INSERT { GRAPH ?c { ?c trails:parentSession $a ; prov:wasDerivedFrom $a } }
WHERE {
  GRAPH $a { $a trails:rewoundFrom $s }
  GRAPH $s { $s trails:rewinds $gen ; trails:ownTurns $keep ; trails:headDigest $keepHead }
  $forks
  GRAPH ?c { ?c trails:parentSession $s }
}
