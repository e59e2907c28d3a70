# restore-drop-replicated: restore-drop.ru on a replicated store, where
# every replica applies it: drop every graph, named and default, but the
# replica's own records (the graph https://w3id.org/trails/graph/replica
# and those under it: its applier's offsets). DROP ALL dropped them too,
# and every applier then stopped, its dataset's offset gone.
DROP DEFAULT ;
DELETE { GRAPH ?g { ?s ?p ?o } }
WHERE {
  GRAPH ?g { ?s ?p ?o }
  FILTER (!STRSTARTS(STR(?g), "https://w3id.org/trails/graph/replica"))
}
