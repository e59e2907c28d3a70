package kg

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/knakk/rdf"
)

// mediaRDFPatch is RDF Patch's media type.
const mediaRDFPatch = "application/rdf-patch"

// FencedPatch sends patch, an RDF Patch, to the dataset's fenced-patch
// endpoint, which Trails' module for Fuseki serves (fuseki/module; the
// servers scripts/fuseki starts load it when it builds): the patch
// applies in one transaction only while the dataset holds offset as its
// applied offset of log (the quad log trails:appliedOffset offset in the
// graph https://w3id.org/trails/graph/replica; -1 for none). It is a
// replica applier's way to write (package cluster), safe only where one
// writer owns the dataset: a patch has no conditions of its own.
//
// It returns an *Error with status 409 when the dataset holds another
// offset (nothing changed), 400 when the store cannot read the patch
// (nothing changed), 404 when the server has no such endpoint; and what
// Update returns otherwise.
func (c *Client) FencedPatch(ctx context.Context, log rdf.IRI, offset int64, patch []byte) error {
	u := c.endpoint + "/fenced-patch?" + url.Values{"log": {log.String()}, "offset": {strconv.FormatInt(offset, 10)}}.Encode()
	return c.do(ctx, request{op: "fenced patch", method: http.MethodPost, url: u, contentType: mediaRDFPatch, body: patch})
}
