package org.trails.fuseki;

import java.util.HashMap;

import org.apache.jena.query.ARQ;
import org.apache.jena.query.Query;
import org.apache.jena.query.QueryFactory;
import org.apache.jena.sparql.algebra.Algebra;
import org.apache.jena.sparql.algebra.Op;
import org.apache.jena.sparql.core.DatasetGraph;
import org.apache.jena.sparql.core.Substitute;
import org.apache.jena.sparql.core.Var;
import org.apache.jena.sparql.engine.Plan;
import org.apache.jena.sparql.engine.QueryEngineRegistry;
import org.apache.jena.sparql.engine.QueryIterator;
import org.apache.jena.sparql.engine.binding.Binding;
import org.apache.jena.sparql.engine.binding.BindingBuilder;
import org.apache.jena.sparql.engine.binding.BindingFactory;
import org.apache.jena.sparql.util.Context;
import org.apache.jena.sparql.util.NodeFactoryExtra;

/**
 * Templates are the queries the module's endpoints take as templates
 * (a conditional patch's ASKs, a template query's SELECT) and the values
 * that bind them. Parsing a query of a few KB costs Jena about half a
 * millisecond, more than binding it: a template is parsed once per
 * request thread and kept. An ASK template is kept compiled and
 * optimized too (asked): a conditional patch evaluates one for every
 * record, and Jena's rewriting of the query for each record's values
 * (substitution in the syntax, compilation, optimization) cost a replica
 * more than evaluating it.
 */
final class Templates {
    /**
     * The templates a request thread parsed, by their text (a thread's own:
     * a parsed Query is not shared between threads); emptied when it holds
     * MAX.
     */
    private static final ThreadLocal<HashMap<String, Query>> PARSED = ThreadLocal.withInitial(HashMap::new);
    private static final int MAX = 16;

    /** The ASKs' algebra a request thread prepared, by their text (asked); emptied when it holds MAX. */
    private static final ThreadLocal<HashMap<String, Op>> ASKED = ThreadLocal.withInitial(HashMap::new);

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

    /**
     * asked returns the algebra of the ASK text, compiled and optimized
     * (Jena's standard rewrites), prepared before by this thread or now;
     * kept only when template (a record's own ASK is used once). It
     * throws IllegalArgumentException for a query that is not an ASK.
     */
    static Op asked(String text, boolean template) {
        HashMap<String, Op> asked = ASKED.get();
        Op op = template ? asked.get(text) : null;
        if (op != null)
            return op;
        Query q = QueryFactory.create(text);
        if (!q.isAskType())
            throw new IllegalArgumentException("the query is not an ASK");
        op = Algebra.optimize(Algebra.compile(q), ARQ.getContext());
        if (template) {
            if (asked.size() >= MAX)
                asked.clear();
            asked.put(text, op);
        }
        return op;
    }

    /**
     * holds evaluates on dsg the ASK whose algebra asked gave, its
     * variables bound by bind (none: null): Jena's substitution into the
     * algebra, then the dataset's engine (TDB2's) without the rewrites
     * asked made already, so that a record costs what evaluating it does.
     */
    static boolean holds(DatasetGraph dsg, Op ask, Binding bind) {
        Op op = bind == null ? ask : Substitute.substitute(ask, bind);
        Context cxt = Context.setupContextForDataset(ARQ.getContext(), dsg);
        cxt.set(ARQ.optimization, false);
        Plan plan = QueryEngineRegistry.findFactory(op, dsg, cxt).create(op, dsg, BindingFactory.empty(), cxt);
        try {
            QueryIterator it = plan.iterator();
            return it.hasNext();
        } finally {
            plan.close();
        }
    }
}
