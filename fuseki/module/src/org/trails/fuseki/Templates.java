package org.trails.fuseki;

import java.util.HashMap;

import org.apache.jena.query.Query;
import org.apache.jena.query.QueryFactory;
import org.apache.jena.sparql.core.Var;
import org.apache.jena.sparql.engine.binding.Binding;
import org.apache.jena.sparql.engine.binding.BindingBuilder;
import org.apache.jena.sparql.engine.binding.BindingFactory;
import org.apache.jena.sparql.util.NodeFactoryExtra;

/**
 * Templates are the queries the module's endpoints take as templates
 * (a conditional patch's ASKs, a template query's SELECT) and the values
 * that bind them. Parsing a query of a few KB costs Jena about half a
 * millisecond, more than binding it: a template is parsed once per
 * request thread and kept.
 */
final class Templates {
    /**
     * The templates a request thread parsed, by their text (a thread's own:
     * a parsed Query is not shared between threads); emptied when it holds
     * MAX.
     */
    private static final ThreadLocal<HashMap<String, Query>> PARSED = ThreadLocal.withInitial(HashMap::new);
    private static final int MAX = 16;

    private Templates() {}

    /** parsed returns the query of text, parsed before by this thread or now (and kept). */
    static Query parsed(String text) {
        HashMap<String, Query> parsed = PARSED.get();
        Query q = parsed.get(text);
        if (q != null)
            return q;
        q = QueryFactory.create(text);
        if (parsed.size() >= MAX)
            parsed.clear();
        parsed.put(text, q);
        return q;
    }

    /**
     * binding reads entries "NAME\tTERM", TERM an RDF term in N-Triples
     * syntax, empty entries skipped, into the values of the variables
     * NAME; where starts its error messages ("record 3: ", or "").
     */
    static Binding binding(Iterable<String> entries, String where) {
        BindingBuilder b = BindingFactory.builder();
        for (String e : entries) {
            if (e.isEmpty())
                continue;
            int tab = e.indexOf('\t');
            if (tab <= 0)
                throw new IllegalArgumentException(where + "a binding without NAME\\tTERM: " + e);
            Var v = Var.alloc(e.substring(0, tab));
            if (b.contains(v))
                throw new IllegalArgumentException(where + v + " bound twice");
            b.add(v, NodeFactoryExtra.parseNode(e.substring(tab + 1)));
        }
        return b.build();
    }
}
