package org.trails.fuseki;

import java.util.List;
import java.util.Set;

import org.apache.jena.fuseki.auth.AuthPolicy;
import org.apache.jena.fuseki.auth.AuthPolicyList;
import org.apache.jena.fuseki.main.FusekiServer;
import org.apache.jena.fuseki.main.sys.FusekiAutoModule;
import org.apache.jena.fuseki.server.DataAccessPoint;
import org.apache.jena.fuseki.server.DataAccessPointRegistry;
import org.apache.jena.fuseki.server.DataService;
import org.apache.jena.fuseki.server.Endpoint;
import org.apache.jena.fuseki.server.Operation;
import org.apache.jena.rdf.model.Model;

/**
 * FencedPatchModule gives every dataset of the server the endpoints
 * "fenced-patch" (FencedPatch): /DATASET/fenced-patch, and
 * "conditional-patch" (ConditionalPatch): /DATASET/conditional-patch,
 * each with the access control of the dataset's update endpoint, and
 * "template-query" (TemplateQuery): /DATASET/template-query, with the
 * access control of its query endpoint (configured). Fuseki loads it
 * when its jar is on the class path (ServiceLoader), so no configuration
 * names it and a server without the jar starts as before.
 */
public class FencedPatchModule implements FusekiAutoModule {
    /** The operation, by its IRI. */
    public static final Operation OP = Operation.alloc("https://w3id.org/trails/fuseki#fencedPatch",
            "trails-fenced-patch", "RDF Patch applied only while the dataset's applied offset of a log is the one named");
    /** The conditional operation, by its IRI. */
    public static final Operation CONDITIONAL = Operation.alloc("https://w3id.org/trails/fuseki#conditionalPatch",
            "trails-conditional-patch", "a log's records, each an ASK and an RDF Patch, applied while their ASKs hold, only while the dataset's applied offset of the log is the one named");

    /** The template query operation, by its IRI. */
    public static final Operation TEMPLATE = Operation.alloc("https://w3id.org/trails/fuseki#templateQuery",
            "trails-template-query", "a SELECT template and the values of its variables, answered as the query with the values in its text");

    @Override
    public String name() {
        return "Trails fenced patch";
    }

    @Override
    public void prepare(FusekiServer.Builder builder, Set<String> datasetNames, Model configModel) {
        builder.registerOperation(OP, new FencedPatch());
        builder.registerOperation(CONDITIONAL, new ConditionalPatch());
        builder.registerOperation(TEMPLATE, new TemplateQuery());
    }

    /**
     * configured adds the two patch endpoints to every dataset that takes
     * SPARQL Update, each with the access its update endpoints have: a
     * user allowed by every one of their policies (none: whoever the
     * dataset lets in, as for its update endpoint). They write, so a user
     * who may only read (an auditor) must not reach them. A dataset
     * without an update endpoint gets neither. The template query endpoint
     * goes to every dataset that takes SPARQL queries, with the access its
     * query endpoints have: it reads as they do.
     */
    @Override
    public void configured(FusekiServer.Builder builder, DataAccessPointRegistry registry, Model configModel) {
        for (DataAccessPoint dap : List.copyOf(registry.accessPoints())) {
            DataService ds = dap.getDataService();
            List<Endpoint> updates = ds.getEndpoints(Operation.Update);
            List<Endpoint> queries = ds.getEndpoints(Operation.Query);
            DataService.Builder service = DataService.newBuilder(ds);
            boolean added = false;
            if (!ds.hasOperation(OP) && !updates.isEmpty()) {
                AuthPolicy policy = policyOf(updates);
                service.addEndpoint(OP, "fenced-patch", policy).addEndpoint(CONDITIONAL, "conditional-patch", policy);
                added = true;
            }
            if (!ds.hasOperation(TEMPLATE) && !queries.isEmpty()) {
                service.addEndpoint(TEMPLATE, "template-query", policyOf(queries));
                added = true;
            }
            if (added)
                registry.put(dap.getName(), new DataAccessPoint(dap.getName(), service.build()));
        }
    }

    /**
     * policyOf returns the access of endpoints: a user allowed by every
     * one of their policies (null when none has one: whoever the dataset
     * lets in).
     */
    private static AuthPolicy policyOf(List<Endpoint> endpoints) {
        AuthPolicy policy = null;
        for (Endpoint ep : endpoints)
            if (ep.getAuthPolicy() != null)
                policy = policy == null ? ep.getAuthPolicy() : AuthPolicyList.merge(policy, ep.getAuthPolicy());
        return policy;
    }
}
