# rechain: give each turn ?t of graph ?g in $turns (a VALUES clause of
# ?g ?t ?d) the chain digest ?d, if it is still in ?g and has no digest
# yet. Rechain computes the digests from the effective history it loaded;
# turns never change in place, and one a Rewind moved meanwhile is left
# for the next run.
PREFIX trails: <https://w3id.org/trails/ns#>
INSERT { GRAPH ?g { ?t trails:digest ?d } }
WHERE {
  $turns
  GRAPH ?g { ?t trails:index ?i }
  FILTER NOT EXISTS { GRAPH ?g { ?t trails:digest ?any } }
}
