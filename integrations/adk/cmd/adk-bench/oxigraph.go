package main

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/trails-kg/trails/internal/pytools"
)

// oxigraphPackage is the PyPI package, at the version the tests pin
// (scripts/python-requirements.txt), whose oxigraph command serves
// Oxigraph.
const oxigraphPackage = "oxigraph==0.5.13"

// errNoOxigraph is returned when the oxigraph command cannot be had.
var errNoOxigraph = errors.New("Oxigraph's server not found")

// findOxigraph returns the path of the oxigraph command in the Python
// environment that scripts/pytools of the checkout at root keeps (making
// it on first use, from PyPI), which fusekitest.StartOxigraph runs, or an
// error saying how to get it.
func findOxigraph(root string) (string, error) {
	bin, err := pytools.Command(root, "oxigraph")
	if err != nil {
		return "", fmt.Errorf("%w: %v; the bench runs the oxigraph command of the PyPI package %s from the Python environment of scripts/pytools: "+
			"run scripts/pytools ensure in the Trails checkout, which pip-installs %s there "+
			"(it needs python3 with its venv module, apt-get install python3 python3-venv on Debian, and PyPI)",
			errNoOxigraph, err, oxigraphPackage, oxigraphPackage)
	}
	return bin, nil
}

// oxigraphVersion returns what the oxigraph command bin says of its
// version, "Oxigraph (unknown version)" when it says nothing.
func oxigraphVersion(bin string) string {
	out, err := exec.Command(bin, "--version").Output()
	if v := strings.TrimSpace(string(out)); err == nil && v != "" {
		return v
	}
	return "Oxigraph (unknown version)"
}
