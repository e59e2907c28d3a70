# artifact-prov: the provenance of artifact version $version, a turn of
# the artifact log $log, in the log's graph: that it prov:wasRevisionOf
# the file's version saved before it ($previous, a VALUES clause of
# ?previous with no row for a first version), and that it
# prov:wasGeneratedBy the tool call that saved it ($calls, a VALUES
# clause of ?call, the trails:ToolCall that artifact-call.rq found in the
# ADK session's history, with no row when the save came from no tool).
# It reads nothing but the log: the calls are terms, so the update goes to
# the log's replica group even when the ADK session is in another one
# (kg.References names that session). Both write nothing when the log
# lacks $version (a graph holds a triple once: running it again changes
# nothing).
PREFIX prov:   <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>

INSERT { GRAPH $log { $version prov:wasRevisionOf ?previous } }
WHERE {
  GRAPH $log { $version a trails:Turn }
  $previous
} ;
INSERT { GRAPH $log { $version prov:wasGeneratedBy ?call } }
WHERE {
  GRAPH $log { $version a trails:Turn }
  $calls
}
