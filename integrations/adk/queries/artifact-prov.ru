# artifact-prov: the provenance of artifact version $version, a turn of
# the artifact log $log, in the log's graph: that it prov:wasRevisionOf
# the file's version saved before it ($previous, a VALUES clause of
# ?previous with no row for a first version), and that it
# prov:wasGeneratedBy the tool call that saved it: the trails:ToolCall
# with call id ?callId ($calls, a VALUES clause with no row when the save
# came from no tool) in the effective history of the ADK session the
# artifact belongs to, $session (its own turns and its ancestors'). Both
# write nothing when the log lacks $version (a graph holds a triple
# once: running it again changes nothing).
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
  $session trails:parentSession* ?s .
  ?t trails:session ?s .
  ?p trails:partOf ?t .
  ?call a trails:ToolCall ;
        trails:toolCallId ?callId ;
        prov:used ?p .
}
