package kg_test

import (
	"strings"
	"testing"

	"github.com/trails-kg/trails/kg"
)

// TestBindData binds a template's parameters and puts the data where its
// "#DATA" comment stands, and only there: a bound value that reads
// "#DATA" stays a value.
func TestBindData(t *testing.T) {
	g := kg.MustIRI("urn:g")
	var d kg.Data
	d.Add(g, g, kg.MustIRI("urn:p"), kg.String("data"))
	quads, err := d.Quads()
	if err != nil {
		t.Fatal(err)
	}
	var bad kg.Data
	bad.Add(g, g, kg.MustIRI("urn:p"), kg.String("\xff"))
	for _, tc := range []struct {
		name    string
		tmpl    string
		data    *kg.Data
		params  kg.Params
		want    string // the bound update, when no error
		wantErr bool
	}{
		{name: "data and a parameter", tmpl: "INSERT {\n#DATA\n} WHERE { $s ?p ?o }", data: &d,
			params: kg.Params{"s": g}, want: "INSERT {\n" + quads + "\n} WHERE { <urn:g> ?p ?o }"},
		{name: "a value that reads #DATA", tmpl: "INSERT {\n#DATA\n} WHERE { ?s ?p $v }", data: &d,
			params: kg.Params{"v": kg.String("#DATA")}, want: "INSERT {\n" + quads + "\n} WHERE { ?s ?p \"#DATA\" }"},
		{name: "no marker", tmpl: "INSERT { } WHERE { }", data: &d, wantErr: true},
		{name: "an unbound parameter", tmpl: "INSERT {\n#DATA\n} WHERE { $s ?p ?o }", data: &d, wantErr: true},
		{name: "data that failed", tmpl: "INSERT {\n#DATA\n} WHERE { }", data: &bad, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := kg.BindData(tc.tmpl, tc.data, tc.params, nil)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %q, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			if strings.Contains(got, "#DATA-") {
				t.Fatalf("got %q: the marker is left", got)
			}
		})
	}
}
