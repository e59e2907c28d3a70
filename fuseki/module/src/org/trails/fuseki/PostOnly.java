package org.trails.fuseki;

import org.apache.jena.fuseki.servlets.ActionREST;
import org.apache.jena.fuseki.servlets.HttpAction;
import org.apache.jena.fuseki.servlets.ServletOps;

/**
 * PostOnly is an endpoint of Trails' module: it takes POST alone, and
 * answers every other method 405 with what it takes (allowed).
 */
abstract class PostOnly extends ActionREST {
    /** allowed says what the endpoint takes, for a 405's message: "fenced patch: POST an RDF Patch". */
    abstract String allowed();

    @Override
    public void validate(HttpAction action) {}

    @Override protected void doGet(HttpAction action) { notAllowed(); }
    @Override protected void doHead(HttpAction action) { notAllowed(); }
    @Override protected void doPut(HttpAction action) { notAllowed(); }
    @Override protected void doDelete(HttpAction action) { notAllowed(); }
    @Override protected void doPatch(HttpAction action) { notAllowed(); }
    @Override protected void doOptions(HttpAction action) { notAllowed(); }

    private void notAllowed() {
        ServletOps.errorMethodNotAllowed(allowed());
    }
}
