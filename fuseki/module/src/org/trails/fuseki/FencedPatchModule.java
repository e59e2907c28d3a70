package org.trails.fuseki;

import java.util.List;
import java.util.Set;

import org.apache.jena.fuseki.main.FusekiServer;
import org.apache.jena.fuseki.main.sys.FusekiAutoModule;
import org.apache.jena.fuseki.server.DataAccessPoint;
import org.apache.jena.fuseki.server.DataAccessPointRegistry;
import org.apache.jena.fuseki.server.DataService;
import org.apache.jena.fuseki.server.Operation;
import org.apache.jena.rdf.model.Model;

/**
 * FencedPatchModule gives every dataset of the server the endpoints
 * "fenced-patch" (FencedPatch): /DATASET/fenced-patch, and
 * "conditional-patch" (ConditionalPatch): /DATASET/conditional-patch.
 * Fuseki loads it
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

    @Override
    public String name() {
        return "Trails fenced patch";
    }

    @Override
    public void prepare(FusekiServer.Builder builder, Set<String> datasetNames, Model configModel) {
        builder.registerOperation(OP, new FencedPatch());
        builder.registerOperation(CONDITIONAL, new ConditionalPatch());
    }

    @Override
    public void configured(FusekiServer.Builder builder, DataAccessPointRegistry registry, Model configModel) {
        for (DataAccessPoint dap : List.copyOf(registry.accessPoints())) {
            if (dap.getDataService().hasOperation(OP))
                continue;
            DataService service = DataService.newBuilder(dap.getDataService()).addEndpoint(OP, "fenced-patch")
                    .addEndpoint(CONDITIONAL, "conditional-patch").build();
            registry.put(dap.getName(), new DataAccessPoint(dap.getName(), service));
        }
    }
}
