# share-value: set the shared value $node (of key $key, held by $holder: a
# principal's agent or an app) from the change $change that $owner (a turn
# or the session of graph $g, created $at) makes, in the graph of shared
# values. Sent after the update that stores the change, in the same
# request: it applies only if that update did (the change is stored under
# an owner created at $at, the time this writer stamped), and only over a
# value changed no later, so that a retried or late request never undoes a
# newer change. A removal leaves the node without trails:value (its
# trails:changedAt still guards it).
PREFIX trails: <https://w3id.org/trails/ns#>
PREFIX prov:   <http://www.w3.org/ns/prov#>
DELETE { GRAPH <https://w3id.org/trails/graph/values> { $node ?p ?o } }
INSERT {
  GRAPH <https://w3id.org/trails/graph/values> {
    $node a trails:SharedValue , prov:Entity ;
      trails:valueOf $holder ;
      trails:key $key ;
      trails:changedAt $at ;
      prov:wasDerivedFrom $change ;
      trails:value ?v .
  }
}
WHERE {
  GRAPH $g {
    $owner trails:created $at ; trails:changes $change .
    $change trails:key $key .
    OPTIONAL { $change trails:value ?v }
  }
  FILTER NOT EXISTS { GRAPH <https://w3id.org/trails/graph/values> { $node trails:changedAt ?c } FILTER(?c > $at) }
  OPTIONAL { GRAPH <https://w3id.org/trails/graph/values> { $node ?p ?o } }
}
