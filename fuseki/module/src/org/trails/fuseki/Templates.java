package org.trails.fuseki;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Set;

import org.apache.jena.query.ARQ;
import org.apache.jena.query.Query;
import org.apache.jena.query.QueryFactory;
import org.apache.jena.sparql.algebra.Algebra;
import org.apache.jena.sparql.algebra.Op;
import org.apache.jena.sparql.algebra.OpLib;
import org.apache.jena.sparql.algebra.OpVisitorByType;
import org.apache.jena.sparql.algebra.OpWalker;
import org.apache.jena.sparql.algebra.op.*;
import org.apache.jena.sparql.core.DatasetGraph;
import org.apache.jena.sparql.core.Substitute;
import org.apache.jena.sparql.core.Var;
import org.apache.jena.sparql.engine.ExecutionContext;
import org.apache.jena.sparql.engine.QueryIterator;
import org.apache.jena.sparql.engine.iterator.QueryIterRoot;
import org.apache.jena.sparql.engine.main.QC;
import org.apache.jena.sparql.engine.binding.Binding;
import org.apache.jena.sparql.engine.binding.BindingBuilder;
import org.apache.jena.sparql.engine.binding.BindingFactory;
import org.apache.jena.sparql.util.Context;
import org.apache.jena.sparql.util.NodeFactoryExtra;
import org.apache.jena.tdb2.TDB2;
import org.apache.jena.tdb2.sys.TDBInternal;

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

    /** The ASKs a request thread prepared, by their text (asked); emptied when it holds MAX. */
    private static final ThreadLocal<HashMap<String, Ask>> ASKED = ThreadLocal.withInitial(HashMap::new);

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
     * asked returns the ASK text prepared (Ask), before by this thread or
     * now; kept only when template (a record's own ASK is used once). It
     * throws IllegalArgumentException for a query that is not an ASK.
     */
    static Ask asked(String text, boolean template) {
        HashMap<String, Ask> asked = ASKED.get();
        Ask a = template ? asked.get(text) : null;
        if (a != null)
            return a;
        Query q = QueryFactory.create(text);
        if (!q.isAskType())
            throw new IllegalArgumentException("the query is not an ASK");
        a = new Ask(q);
        if (template) {
            if (asked.size() >= MAX)
                asked.clear();
            asked.put(text, a);
        }
        return a;
    }

    /**
     * An Ask is an ASK prepared as TDB2's engine prepares a query
     * (QueryEngineTDB): compiled, optimized (Jena's standard rewrites) and
     * in quad form, and as well with the default graph the union of the
     * named graphs (tdb2:unionDefaultGraph); input says whether its values
     * may be given to the evaluation as its input (inputSafe) rather than
     * substituted into the algebra.
     */
    static final class Ask {
        final Op optimized, op, union;
        final boolean input;
        final Set<Var> assigned = new HashSet<>();

        Ask(Query q) {
            optimized = Algebra.optimize(Algebra.compile(q), ARQ.getContext());
            op = Algebra.toQuadForm(optimized);
            union = OpLib.unionDefaultGraphQuads(op);
            input = inputSafe(op, assigned);
        }

        /**
         * holds evaluates the ASK on the dataset of on, its variables
         * bound by bind (none: null), in the caller's transaction: on the
         * dataset's storage with TDB2's executor, as TDB2's engine does,
         * but without rewriting the algebra again for each record. The
         * values are the evaluation's input when that gives the same
         * answer (input), else Jena's substitution puts them into the
         * algebra.
         */
        boolean holds(On on, Binding bind) {
            Op o = on.unionGraph ? union : op;
            Binding in = BindingFactory.empty();
            if (bind != null && input && assigned.stream().noneMatch(bind::contains)) {
                in = bind;
            } else if (bind != null) {
                // Substituted before the quad form, as TDB2's engine does:
                // the quad form may assign a graph's variable.
                o = Algebra.toQuadForm(Substitute.substitute(optimized, bind));
                if (on.unionGraph)
                    o = OpLib.unionDefaultGraphQuads(o);
            }
            ExecutionContext ec = ExecutionContext.create(on.target, on.cxt);
            QueryIterator it = QC.execute(o, in.isEmpty() ? QueryIterRoot.create(ec) : QueryIterRoot.create(in, ec), ec);
            try {
                return it.hasNext();
            } finally {
                it.close();
            }
        }
    }

    /**
     * On is where a request's ASKs are evaluated (Ask.holds): a dataset's
     * storage (TDB2's, when it is one), the dataset's context, and whether
     * its default graph is the union of its named graphs; made once per
     * transaction, not once per record.
     */
    static final class On {
        final Context cxt;
        final DatasetGraph target;
        final boolean unionGraph;

        On(DatasetGraph dsg) {
            cxt = Context.setupContextForDataset(ARQ.getContext(), dsg);
            boolean tdb = TDBInternal.isBackedByTDB(dsg);
            target = tdb ? TDBInternal.requireStorage(dsg) : dsg;
            unionGraph = tdb && (cxt.isTrue(TDB2.symUnionDefaultGraph1) || cxt.isTrue(TDB2.symUnionDefaultGraph2));
        }
    }

    /**
     * inputSafe reports whether op gives the same solutions evaluated with
     * values as its input (each row starts from them) as with the values
     * substituted into it, and adds to assigned the variables it assigns
     * (BIND, and the optimizer's assignments), which the values must not
     * bind. That holds for the operators that pass each row on to the next
     * (filters, sequences, conditionals, disjunctions, graph patterns),
     * whose filters and EXISTS see the row, and for the quad form's
     * assignments (OpAssign keeps a row whose variable holds the value
     * already, and drops one where it holds another); a join, an OPTIONAL
     * left as a left join, a union, a MINUS, a subquery or a path evaluates
     * a side without the row, and is not.
     */
    static boolean inputSafe(Op op, Set<Var> assigned) {
        boolean[] safe = {true};
        OpWalker.walk(op, new OpVisitorByType() {
            @Override protected void visitN(OpN o) { safe[0] &= o instanceof OpSequence || o instanceof OpDisjunction; }
            @Override protected void visit2(Op2 o) { safe[0] &= o instanceof OpConditional; }
            @Override protected void visit1(Op1 o) {
                if (o instanceof OpExtend e)
                    assigned.addAll(e.getVarExprList().getVars());
                else
                    safe[0] &= o instanceof OpGraph || o instanceof OpAssign;
            }
            @Override protected void visit0(Op0 o) {
                safe[0] &= o instanceof OpQuadPattern || o instanceof OpBGP || o instanceof OpTriple || o instanceof OpQuad
                    || o instanceof OpTable t && t.isJoinIdentity();
            }
            @Override protected void visitExt(OpExt o) { safe[0] = false; }
            @Override protected void visitFilter(OpFilter o) {}
            @Override protected void visitLeftJoin(OpLeftJoin o) { safe[0] = false; }
            @Override protected void visitModifer(OpModifier o) { safe[0] = false; }
        });
        return safe[0];
    }
}
