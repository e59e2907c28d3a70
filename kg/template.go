package kg

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
)

// errNoDataMarker is BindData's error for a template without the marker.
var errNoDataMarker = errors.New(`kg: update template has no "#DATA" comment`)

// BindData binds the parameters and tables of update template tmpl as
// BindTables does, then puts the quads of d (Data.Quads) where the
// template's first "#DATA" comment stands, typically inside an INSERT
// block. The template is bound alone, before the quads go in: binding
// scans what it binds, and the quads are most of the request. The marker
// gets a random suffix first, so that no bound value can look like it.
//
// It fails with d's error (Data.Err), with BindTables' errors, or when
// tmpl has no "#DATA" comment.
func BindData(tmpl string, d *Data, params Params, tables map[string]Table) (string, error) {
	quads, err := d.Quads()
	if err != nil {
		return "", err
	}
	if !strings.Contains(tmpl, "#DATA") {
		return "", errNoDataMarker
	}
	var r [8]byte
	rand.Read(r[:])
	marker := "#DATA-" + hex.EncodeToString(r[:])
	bound, err := BindTables(strings.Replace(tmpl, "#DATA", marker, 1), params, tables)
	if err != nil {
		return "", err
	}
	return strings.Replace(bound, marker, quads, 1), nil
}
