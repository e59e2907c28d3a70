# share-value: set the shared value $node (of key $key, held by $holder: a
# principal's agent or an app) from the change $change that $owner (a turn
# or the session of graph $g, created $at) makes, in the graph of shared
# values. Sent after the update that stores the change, in the same
# request: it applies only if the change is stored (under an owner created
# at $at, the time this writer stamped), and at most once per change: it
# marks the change trails:sharedAt the store's time, and a change so
# marked is never applied again. So shared values follow the order in
# which the store acknowledged their changes, never a client's clock (a
# turn dated 2099 does not outrank later writes), and a retried or
# repeated request (a lost answer, an import run again) never undoes a
# newer change. trails:changedAt is the store's time of the change
# applied (for a Querier whose updates several replicas apply, package
# cluster, the writer's time instead: the Store replaces NOW() with $now,
# so that every replica stores the same value). A removal leaves the node without trails:value. No PREFIX: it
# follows another operation in its request, and not every store takes a
# prologue there.
DELETE { GRAPH <https://w3id.org/trails/graph/values> { $node ?p ?o } }
INSERT {
  GRAPH <https://w3id.org/trails/graph/values> {
    $node a <https://w3id.org/trails/ns#SharedValue> , <http://www.w3.org/ns/prov#Entity> ;
      <https://w3id.org/trails/ns#valueOf> $holder ;
      <https://w3id.org/trails/ns#key> $key ;
      <https://w3id.org/trails/ns#changedAt> ?now ;
      <http://www.w3.org/ns/prov#wasDerivedFrom> $change ;
      <https://w3id.org/trails/ns#value> ?v .
    $change <https://w3id.org/trails/ns#sharedAt> ?now .
  }
}
WHERE {
  GRAPH $g {
    $owner <https://w3id.org/trails/ns#created> $at ; <https://w3id.org/trails/ns#changes> $change .
    $change <https://w3id.org/trails/ns#key> $key .
    OPTIONAL { $change <https://w3id.org/trails/ns#value> ?v }
  }
  FILTER NOT EXISTS { GRAPH <https://w3id.org/trails/graph/values> { $change <https://w3id.org/trails/ns#sharedAt> ?done } }
  FILTER NOT EXISTS { GRAPH <https://w3id.org/trails/graph/values> { $node <http://www.w3.org/ns/prov#wasDerivedFrom> $change } }
  OPTIONAL { GRAPH <https://w3id.org/trails/graph/values> { $node ?p ?o } }
  BIND(NOW() AS ?now)
}
