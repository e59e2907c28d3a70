package session

import (
	"fmt"

	"github.com/google/uuid"
	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// sessionIRI returns the IRI (and graph) of session id.
func sessionIRI(id string) rdf.IRI { return kg.MustIRI(ontology.SessionIRI(id)) }

// shownID returns session id as an error message shows it, escaped and
// cut (termsafe.Cut): an id a caller gave may be anything.
func shownID(id string) string { return termsafe.Cut(id, termsafe.MaxQuoted) }

// checkID returns ErrInvalid unless id is a UUID in canonical form.
func checkID(id string) error {
	u, err := uuid.Parse(id)
	if err != nil || u.String() != id {
		return fmt.Errorf("%w: session id %s is not a canonical UUID", ErrInvalid, termsafe.Quote(id))
	}
	return nil
}
