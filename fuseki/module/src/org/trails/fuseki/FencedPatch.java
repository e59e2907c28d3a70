package org.trails.fuseki;

import java.io.IOException;
import java.io.InputStream;
import java.util.Iterator;

import org.apache.jena.atlas.RuntimeIOException;
import org.apache.jena.fuseki.servlets.ActionErrorException;
import org.apache.jena.fuseki.servlets.HttpAction;
import org.apache.jena.fuseki.servlets.ServletOps;
import org.apache.jena.graph.Node;
import org.apache.jena.graph.NodeFactory;
import org.apache.jena.rdfpatch.RDFPatch;
import org.apache.jena.rdfpatch.RDFPatchOps;
import org.apache.jena.rdfpatch.changes.RDFChangesApply;
import org.apache.jena.rdfpatch.changes.RDFChangesWrapper;
import org.apache.jena.riot.RiotException;
import org.apache.jena.sparql.core.DatasetGraph;
import org.apache.jena.sparql.core.Quad;

/**
 * FencedPatch applies the RDF Patch a request carries (POST, body
 * application/rdf-patch) in one write transaction, only while the
 * dataset's applied offset of a log is the one the request names: the
 * quad (LOG trails:appliedOffset N) in graph
 * https://w3id.org/trails/graph/replica, where LOG is the request's
 * parameter log and N its parameter offset (-1: the dataset holds no
 * offset of LOG). Otherwise it answers 409 and changes nothing. The
 * patch's own TX, TC and TA lines are ignored: the request is the
 * transaction. It is a Trails replica applier's fencing token: an
 * applier that lost its place can never apply a batch twice or out of
 * order, as with the position guard of its SPARQL updates.
 */
public class FencedPatch extends PostOnly {
    static final String REPLICA_GRAPH = "https://w3id.org/trails/graph/replica";
    static final String APPLIED_OFFSET = "https://w3id.org/trails/ns#appliedOffset";

    @Override
    String allowed() {
        return "fenced patch: POST an RDF Patch";
    }

    @Override
    protected void doPost(HttpAction action) {
        String log = logParam(action, "fenced patch");
        long want = offsetParam(action, "fenced patch");
        RDFPatch patch;
        try (InputStream in = action.getRequestInputStream()) {
            patch = RDFPatchOps.read(in);
        } catch (IOException | RuntimeIOException e) {
            ServletOps.errorBadRequest("fenced patch: reading the body: " + e.getMessage());
            return;
        } catch (RiotException e) {
            ServletOps.errorBadRequest("fenced patch: " + e.getMessage());
            return;
        }
        action.beginWrite();
        try {
            DatasetGraph dsg = action.getActiveDSG();
            checkOffset(action, dsg, log, want);
            apply(dsg, patch);
            action.commit();
        } catch (ActionErrorException e) {
            throw e;
        } catch (RuntimeException e) {
            action.abort();
            ServletOps.errorBadRequest("fenced patch: " + e.getMessage());
        } finally {
            action.end();
        }
        ServletOps.successNoContent(action);
    }

    /** logParam returns the request's parameter log (a log's IRI), or answers 400 for operation op. */
    static String logParam(HttpAction action, String op) {
        String log = action.getRequestParameter("log");
        if (log == null || log.isEmpty())
            ServletOps.errorBadRequest(op + ": the parameters log (the log's IRI) and offset (the dataset's offset of it, -1 for none) are required");
        return log;
    }

    /** offsetParam returns the request's parameter offset, or answers 400 for operation op. */
    static long offsetParam(HttpAction action, String op) {
        String offset = action.getRequestParameter("offset");
        if (offset == null)
            ServletOps.errorBadRequest(op + ": the parameters log (the log's IRI) and offset (the dataset's offset of it, -1 for none) are required");
        try {
            return Long.parseLong(offset);
        } catch (NumberFormatException e) {
            ServletOps.errorBadRequest(op + ": offset " + offset + " is not an integer");
            return 0; // not reached: errorBadRequest throws
        }
    }

    /**
     * checkOffset aborts action's write transaction and answers 409 unless
     * dsg holds offset want of log (one value; -1: none).
     */
    static void checkOffset(HttpAction action, DatasetGraph dsg, String log, long want) {
        Iterator<Quad> it = dsg.find(NodeFactory.createURI(REPLICA_GRAPH), NodeFactory.createURI(log),
                NodeFactory.createURI(APPLIED_OFFSET), Node.ANY);
        long have = -1;
        int n = 0;
        while (it.hasNext()) {
            Node o = it.next().getObject();
            n++;
            try {
                have = o.isLiteral() ? Long.parseLong(o.getLiteralLexicalForm()) : Long.MIN_VALUE;
            } catch (NumberFormatException e) {
                have = Long.MIN_VALUE;
            }
        }
        if (n > 1 || have != want) {
            action.abort();
            ServletOps.error(409, "fenced patch: the dataset's offset of " + log + " is "
                    + (n > 1 ? n + " values" : Long.toString(have)) + ", want " + want);
        }
    }

    /** apply applies patch to dsg in the transaction under way (its own TX, TC and TA ignored). */
    static void apply(DatasetGraph dsg, RDFPatch patch) {
        patch.apply(new RDFChangesWrapper(new RDFChangesApply(dsg)) {
            @Override public void txnBegin() {}
            @Override public void txnCommit() {}
            @Override public void txnAbort() {}
        });
    }
}
