// Package cluster runs Trails on a replicated log: Apache Kafka keeps the
// order of every write, and each replica (a Fuseki dataset with its
// Applier) applies the log in that order. It is state-machine replication
// on an existing engine, not a consensus of Trails' own.
//
// A writer's Client sends each SPARQL Update, the same conditional updates
// a session.Store sends to one Fuseki, as one record to partition 0 of the
// log topic (one total order: shared values, detaches, cascades and
// imports cross session trees), produced with acks from every in-sync
// replica and an idempotent producer. Update returns once the record is in
// the log and a replica has applied it: nil when it applied, a *kg.Error
// matching kg.ErrBadRequest when the store refused it (its condition did
// not hold), as one Fuseki answers. When no replica can tell (the writer
// lost the log or every replica's answer), the outcome is unknown and
// Update returns a *kg.Error matching kg.ErrUnavailable: a session.Store
// then fences the write and asks, as after a lost answer from one Fuseki.
//
// Reads go to a replica at or past the writer's last write, so a Client
// reads its own writes, and its reads never go back in the log.
//
// An Applier consumes the partition in order from where its dataset says
// it stopped and applies the records in batches, one transaction each,
// writing the offset of the last one into the dataset (graph
// ontology.ReplicaGraph) in the same transaction: a replica that restarts
// resumes exactly once. A batch whose request the store refuses is
// applied again record by record, so that a refused record is refused
// alone: the request that moves the offset past it writes its refusal
// marker (ontology.RefusedIn) in the same transaction, which the writer
// is answered from. The offset's check in every request is a compare and
// swap that fences any other applier of the dataset, and the markers say
// what became of every record the dataset passed: an applier that finds
// its records passed by another's request serves what the markers say,
// never "applied" from the offset alone. Every replica applies the
// same records in the same order, so replicas hold the same data at the
// same offset: records must not depend on where or when they apply (no
// NOW(), RAND(), UUID() or blank nodes made by the store; session.Store
// fills in such values itself for a Client, which tells it so).
//
// A Sharded spreads session trees over N replica groups, each a Client of
// its own topic: it routes each request by the session IRIs in its text,
// so a tree's writes stay in one group's total order, refuses a write
// that would need two groups' logs at once (ErrCrossGroup), sends the
// shared values a tree outside the shared group sets as a second record
// behind the tree's write (Reshare completes them after a writer's
// death), and sends reads that
// span groups to an audit replica that applies every group's topic into
// one dataset. Reads on a replica that goes silent move to another within
// a few seconds (Client's reads ping a replica that is slow to answer).
//
// Through the OpenTelemetry API, a no-op until the program installs a
// provider, each write of a Client is a producer span "send TOPIC" with
// the record's offset (messaging.kafka.offset), and a running Applier
// reports the records it applied and refused, the duration of its
// requests, its position and its lag behind the log (docs/operations.md
// lists the names).
package cluster
