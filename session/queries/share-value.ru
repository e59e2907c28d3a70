# share-value: set the shared value $node (of key $key, held by $holder: a
# principal's agent or an app) from the change $change that $owner (a turn
# or the session of graph $g, created $at) makes, in the graph of shared
# values. Sent after the update that stores the change, in the same
# request: it applies only if that update did (the change is stored under
# an owner created at $at, the time this writer stamped), and only over a
# value changed no later, so that a retried or late request never undoes a
# newer change. A removal leaves the node without trails:value (its
# trails:changedAt still guards it). No PREFIX: it follows another
# operation in its request, and not every store takes a prologue there.
DELETE { GRAPH <https://w3id.org/trails/graph/values> { $node ?p ?o } }
INSERT {
  GRAPH <https://w3id.org/trails/graph/values> {
    $node a <https://w3id.org/trails/ns#SharedValue> , <http://www.w3.org/ns/prov#Entity> ;
      <https://w3id.org/trails/ns#valueOf> $holder ;
      <https://w3id.org/trails/ns#key> $key ;
      <https://w3id.org/trails/ns#changedAt> $at ;
      <http://www.w3.org/ns/prov#wasDerivedFrom> $change ;
      <https://w3id.org/trails/ns#value> ?v .
  }
}
WHERE {
  GRAPH $g {
    $owner <https://w3id.org/trails/ns#created> $at ; <https://w3id.org/trails/ns#changes> $change .
    $change <https://w3id.org/trails/ns#key> $key .
    OPTIONAL { $change <https://w3id.org/trails/ns#value> ?v }
  }
  FILTER NOT EXISTS { GRAPH <https://w3id.org/trails/graph/values> { $node <https://w3id.org/trails/ns#changedAt> ?c } FILTER(?c > $at) }
  OPTIONAL { GRAPH <https://w3id.org/trails/graph/values> { $node ?p ?o } }
}
