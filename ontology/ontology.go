// Package ontology holds the Trails vocabulary and its SHACL shapes as Turtle
// files embedded in the binary, and the Go constants that spell every IRI
// Trails writes. The store loads Vocabulary and Shapes into OntologyGraph, and
// trails-admin check validates stored data against Shapes. It imports no other
// package of this module.
//
// Comments that cite a "design note 00N" mean the design notes 000-004
// the vocabulary's features come from; they are not in this repository (see
// the README, "Features and the design notes they come from").
package ontology

import _ "embed"

// Vocabulary is the Trails vocabulary (trails.ttl) in Turtle: an OWL ontology
// that labels, comments and aligns with PROV-O, SIOC, schema.org and DCMI
// terms every class and property in NS. Callers must not modify it.
//
//go:embed trails.ttl
var Vocabulary []byte

// Shapes is the SHACL shapes graph (shapes.ttl: SHACL Core and SHACL-SPARQL
// constraints, which Jena and pySHACL both run) in Turtle that data
// written by Trails conforms to: turns, sessions, forks, fork activities and
// agents. Fuseki validates against it when it is POSTed to the dataset's shacl
// endpoint. Callers must not modify it.
//
//go:embed shapes.ttl
var Shapes []byte
