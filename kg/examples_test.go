package kg_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/trails-kg/trails/kg"
)

// Values enter SPARQL as RDF terms that Bind serializes, never as pasted
// text: a quote or a line break in a value stays inside its literal.
func ExampleBind() {
	q, err := kg.Bind(`SELECT ?t WHERE { ?s <http://purl.org/dc/terms/identifier> $id ; ?p ?t }`,
		kg.Params{"id": kg.String("x\" } ; DROP ALL #\n")})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(q)

	_, err = kg.Bind(`ASK { $s ?p ?o }`, kg.Params{}) // $s has no value: nothing is sent
	fmt.Println(errors.Is(err, kg.ErrUnboundParam))
	// Output:
	// SELECT ?t WHERE { ?s <http://purl.org/dc/terms/identifier> "x\" } ; DROP ALL #\n" ; ?p ?t }
	// true
}
