package org.trails.fuseki;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.apache.jena.atlas.RuntimeIOException;
import org.apache.jena.datatypes.xsd.XSDDatatype;
import org.apache.jena.fuseki.servlets.ActionErrorException;
import org.apache.jena.fuseki.servlets.HttpAction;
import org.apache.jena.fuseki.servlets.ServletOps;
import org.apache.jena.graph.Node;
import org.apache.jena.graph.NodeFactory;
import org.apache.jena.rdfpatch.RDFPatch;
import org.apache.jena.rdfpatch.RDFPatchOps;
import org.apache.jena.shared.JenaException;
import org.apache.jena.sparql.core.DatasetGraph;
import org.apache.jena.sparql.engine.binding.Binding;
import org.apache.jena.sparql.exec.UpdateExec;
import org.apache.jena.update.UpdateFactory;
import org.apache.jena.update.UpdateRequest;

/**
 * ConditionalPatch applies a run of a log's records, each an ASK query
 * and an RDF Patch, in one write transaction, only while the dataset's
 * applied offset of the log is the one named (as FencedPatch). In the
 * transaction, record after record, it evaluates the record's ASK on the
 * dataset as the records before it left it; while it holds, it applies
 * the record's patch. At the first that does not hold it stops. It then
 * moves the dataset's offset of the log to the offset of the last record
 * applied, and answers 204 with that count in the header Trails-Applied
 * (a header, not a body: an answer with a body cost this server's Go
 * clients some 2 ms more a request); none applied changes nothing.
 *
 * Body (POST, application/vnd.trails.conditional-patch): the line
 * "trails-conditional-patch/1", then for each record a line
 * "OFFSET ASKBYTES PATCHBYTES" followed by the ASK's UTF-8 text and the
 * patch's, of those byte lengths; or "OFFSET ASKBYTES PATCHBYTES
 * BINDBYTES" followed by the same and then the record's bindings: lines
 * "NAME\tTERM", TERM an RDF term in N-Triples syntax. With bindings the
 * ASK is a template whose variables NAME take the values TERM (Jena's
 * substitution, as if the terms stood in the text); the server prepares
 * a template once (Templates.Ask) and evaluates each record's values on
 * it, since preparing a query cost more than evaluating it. Offsets must
 * follow the named offset one by one. 409: another offset; 400: a body,
 * query or patch it cannot read (nothing changed either way).
 *
 * It is a Trails replica applier's way to apply appends whose condition
 * is an ASK, without reading first: the evaluation happens where the
 * write does, in the same transaction, so the dataset cannot change in
 * between and a record sees the records before it.
 *
 * With the parameter gate instead of log and offset, the records are a
 * direct writer's group commit (doGated): no offset, every record
 * applied or not on its own, the answer says which.
 *
 * In the log mode a record may also be a group commit's record: a line
 * "OFFSET G BYTES GATE RECEIPT|- [DROP ...]" followed by that many bytes
 * in the gated mode's format. Unless GATE is fenced (the record then
 * does not hold, and the run stops there), its records are applied as
 * the gated mode applies them, each on its own, with RECEIPT's receipts
 * and the DROP graphs emptied, and the record counts as applied.
 */
public class ConditionalPatch extends PostOnly {
    static final String MAGIC = "trails-conditional-patch/1";
    static final String FENCES_GRAPH = "https://w3id.org/trails/graph/fences";
    static final String FENCED_AT = "https://w3id.org/trails/ns#fencedAt";
    static final String APPLIED = "https://w3id.org/trails/ns#applied";

    /** A record of the body: its ASK, the values of its variables (none: null), its patch. */
    record Rec(long offset, Templates.Ask ask, Binding bind, RDFPatch patch, UpdateRequest update, String ack, Group group) {}

    /** A group record's writes and what it writes and drops besides (doGated's parameters). */
    record Group(String gate, String receipt, String[] drops, List<Rec> members) {}

    @Override
    String allowed() {
        return "conditional patch: POST records";
    }

    @Override
    protected void doPost(HttpAction action) {
        String gate = action.getRequestParameter("gate");
        if (gate != null) {
            doGated(action, gate);
            return;
        }
        String log = FencedPatch.logParam(action, "conditional patch");
        long want = FencedPatch.offsetParam(action, "conditional patch");
        List<Rec> recs = records(action, want);
        int applied = 0;
        action.beginWrite();
        try {
            DatasetGraph dsg = action.getActiveDSG();
            Templates.On on = new Templates.On(dsg);
            FencedPatch.checkOffset(action, dsg, log, want);
            for (Rec r : recs) {
                if (r.update() != null)
                    throw new IllegalArgumentException("record " + r.offset() + " is an update: only the gated mode takes them");
                if (r.group() != null) {
                    Group g = r.group();
                    if (fenced(dsg, g.gate()))
                        break;
                    applyGated(dsg, on, g.members(), g.receipt(), g.drops(), new char[g.members().size()]);
                } else if (r.ask().holds(on, r.bind())) {
                    FencedPatch.apply(dsg, r.patch());
                } else {
                    break;
                }
                applied++;
            }
            if (applied > 0) {
                Node g = NodeFactory.createURI(FencedPatch.REPLICA_GRAPH), s = NodeFactory.createURI(log),
                        p = NodeFactory.createURI(FencedPatch.APPLIED_OFFSET);
                dsg.deleteAny(g, s, p, Node.ANY);
                dsg.add(g, s, p, NodeFactory.createLiteralDT(Long.toString(recs.get(applied - 1).offset()), XSDDatatype.XSDinteger));
                action.commit();
            } else {
                action.abort();
            }
        } catch (ActionErrorException e) {
            throw e;
        } catch (RuntimeException e) {
            action.abort();
            ServletOps.errorBadRequest("conditional patch: " + e.getMessage());
        } finally {
            action.end();
        }
        action.setResponseHeader("Trails-Applied", Integer.toString(applied));
        ServletOps.successNoContent(action);
    }

    /**
     * doGated serves the gated mode (parameter gate, no log): the records
     * (offsets 0, 1, ...) are independent writes, each applied when its
     * ASK holds, whatever the others do; none is skipped for another's
     * refusal. Before any, the transaction checks that gate is not fenced
     * (a quad GATE trails:fencedAt ?t in graph FENCES_GRAPH): fenced, it
     * answers 409 and changes nothing, so that a writer who lost the
     * answer can fence the gate and then know that the request either
     * committed or never will. The graphs named by the parameters drop
     * (any number) are emptied in the same transaction. The answer is 204
     * with header Trails-Applied-Members: one character a record, 1 for
     * applied, 0 for not.
     *
     * A record may also be a SPARQL Update, run as it is: its line is
     * "OFFSET U UPDATEBYTES ACK" followed by its text, ACK an IRI (no
     * spaces) or "-". With an ACK the update writes the quad (ACK ACK
     * ACK) in graph ACK only when its own condition held: the record is
     * then applied, its receipt (RECEIPT trails:applied ACK, in graph
     * RECEIPT, the parameter receipt, when given) written and the ack
     * graph emptied. Without, the record answers 1 once run, and its
     * writer asks the store what it did. An update that fails fails the
     * request (400), nothing changed.
     */
    private static void doGated(HttpAction action, String gate) {
        String[] drops = action.getRequest().getParameterValues("drop");
        String receiptParam = action.getRequestParameter("receipt");
        List<Rec> recs = records(action, -1);
        char[] applied = new char[recs.size()];
        action.beginWrite();
        try {
            DatasetGraph dsg = action.getActiveDSG();
            if (fenced(dsg, gate)) {
                action.abort();
                ServletOps.error(409, "conditional patch: gate " + gate + " is fenced");
            }
            boolean changed = applyGated(dsg, new Templates.On(dsg), recs, receiptParam, drops, applied);
            if (changed)
                action.commit();
            else
                action.abort();
        } catch (ActionErrorException e) {
            throw e;
        } catch (RuntimeException e) {
            action.abort();
            ServletOps.errorBadRequest("conditional patch: " + e.getMessage());
        } finally {
            action.end();
        }
        action.setResponseHeader("Trails-Applied-Members", new String(applied));
        ServletOps.successNoContent(action);
    }

    /** fenced reports whether gate is fenced in dsg. */
    private static boolean fenced(DatasetGraph dsg, String gate) {
        return dsg.find(NodeFactory.createURI(FENCES_GRAPH), NodeFactory.createURI(gate), NodeFactory.createURI(FENCED_AT), Node.ANY).hasNext();
    }

    /**
     * applyGated applies recs to dsg, each on its own (doGated; their
     * ASKs evaluated on on), setting
     * applied[i] to 1 or 0 for each, writes the receipts into graph
     * receipt (none: null) and empties the graphs drops (none: null). It
     * reports whether anything may have changed.
     */
    private static boolean applyGated(DatasetGraph dsg, Templates.On on, List<Rec> recs, String receiptIRI, String[] drops, char[] applied) {
        Node receipt = receiptIRI == null ? null : NodeFactory.createURI(receiptIRI);
        boolean changed = false;
        for (int i = 0; i < recs.size(); i++) {
            Rec r = recs.get(i);
            applied[i] = '0';
            if (r.group() != null)
                throw new IllegalArgumentException("record " + i + " is a group: only the log mode takes them");
            if (r.update() != null) {
                UpdateExec.dataset(dsg).update(r.update()).execute();
                changed = true;
                applied[i] = r.ack() == null ? '1' : acknowledged(dsg, NodeFactory.createURI(r.ack()), receipt);
            } else if (r.ask().holds(on, r.bind())) {
                FencedPatch.apply(dsg, r.patch());
                applied[i] = '1';
                changed = true;
            }
        }
        if (drops != null) {
            for (String g : drops) {
                dsg.deleteAny(NodeFactory.createURI(g), Node.ANY, Node.ANY, Node.ANY);
                changed = true;
            }
        }
        return changed;
    }

    /**
     * acknowledged reports whether an update record with ack graph ack
     * applied: its update wrote the quad (ack ack ack) into graph ack
     * only when its condition held. It then writes the record's receipt
     * (receipt trails:applied ack, in graph receipt; none when receipt is
     * null) and empties the ack graph.
     */
    private static char acknowledged(DatasetGraph dsg, Node ack, Node receipt) {
        boolean ok = dsg.contains(ack, ack, ack, ack);
        dsg.deleteAny(ack, Node.ANY, Node.ANY, Node.ANY);
        if (ok && receipt != null)
            dsg.add(receipt, receipt, NodeFactory.createURI(APPLIED), ack);
        return ok ? '1' : '0';
    }

    /**
     * records reads the request's body, whose records follow offset want,
     * or answers 400 (ServletOps throws) when it cannot.
     */
    private static List<Rec> records(HttpAction action, long want) {
        try (InputStream in = action.getRequestInputStream()) {
            return parse(in.readAllBytes(), want);
        } catch (IOException | RuntimeIOException e) {
            ServletOps.errorBadRequest("conditional patch: reading the body: " + e.getMessage());
        } catch (IllegalArgumentException | JenaException e) {
            ServletOps.errorBadRequest("conditional patch: " + e.getMessage());
        }
        return null; // not reached: errorBadRequest throws
    }

    /** parse reads a body whose records follow offset want. */
    static List<Rec> parse(byte[] body, long want) {
        List<Rec> recs = new ArrayList<>();
        int[] at = {0};
        if (!MAGIC.equals(line(body, at)))
            throw new IllegalArgumentException("the body does not begin with the line " + MAGIC);
        long next = want + 1;
        while (at[0] < body.length) {
            String[] f = line(body, at).split(" ");
            if (f.length == 4 && f[1].equals("U")) {
                recs.add(updateRec(recs.size(), f, body, at, next));
                next++;
                continue;
            }
            if (f.length >= 5 && f[1].equals("G")) {
                recs.add(groupRec(recs.size(), f, body, at, next));
                next++;
                continue;
            }
            if (f.length != 3 && f.length != 4)
                throw new IllegalArgumentException("record " + recs.size() + ": the line \"OFFSET ASKBYTES PATCHBYTES [BINDBYTES]\" has " + f.length + " fields");
            long off;
            int na, np, nb;
            try {
                off = Long.parseLong(f[0]);
                na = Integer.parseInt(f[1]);
                np = Integer.parseInt(f[2]);
                nb = f.length == 4 ? Integer.parseInt(f[3]) : 0;
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("record " + recs.size() + ": " + e.getMessage());
            }
            if (off != next)
                throw new IllegalArgumentException("record " + recs.size() + " has offset " + off + ", want " + next);
            if (na < 0 || np < 0 || nb < 0 || (long) at[0] + na + np + nb > body.length)
                throw new IllegalArgumentException("record " + recs.size() + ": " + na + " + " + np + " + " + nb + " bytes past the body's end");
            String text = new String(body, at[0], na, StandardCharsets.UTF_8);
            Templates.Ask q;
            try {
                q = Templates.asked(text, f.length == 4);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("record " + recs.size() + ": " + e.getMessage());
            }
            RDFPatch patch = RDFPatchOps.read(new ByteArrayInputStream(body, at[0] + na, np));
            Binding bind = f.length == 4 ? Templates.binding(Arrays.asList(new String(body, at[0] + na + np, nb, StandardCharsets.UTF_8).split("\n")), "record " + recs.size() + ": ") : null;
            at[0] += na + np + nb;
            recs.add(new Rec(off, q, bind, patch, null, null, null));
            next++;
        }
        return recs;
    }

    /**
     * updateRec reads record i, an update record: its line f is "OFFSET U
     * UPDATEBYTES ACK", followed by the update's UTF-8 text.
     */
    private static Rec updateRec(int i, String[] f, byte[] body, int[] at, long next) {
        int n = sized(i, f, body, at, next);
        UpdateRequest u = UpdateFactory.create(new String(body, at[0], n, StandardCharsets.UTF_8));
        at[0] += n;
        return new Rec(next, null, null, null, u, f[3].equals("-") ? null : f[3], null);
    }

    /**
     * sized checks the line f of record i, "OFFSET KIND BYTES ...": its
     * offset is next, and BYTES from at lie in body; it returns BYTES.
     */
    private static int sized(int i, String[] f, byte[] body, int[] at, long next) {
        long off;
        int n;
        try {
            off = Long.parseLong(f[0]);
            n = Integer.parseInt(f[2]);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("record " + i + ": " + e.getMessage());
        }
        if (off != next)
            throw new IllegalArgumentException("record " + i + " has offset " + off + ", want " + next);
        if (n < 0 || (long) at[0] + n > body.length)
            throw new IllegalArgumentException("record " + i + ": " + n + " bytes past the body's end");
        return n;
    }

    /**
     * groupRec reads record i, a group record: its line f is "OFFSET G
     * BYTES GATE RECEIPT|- [DROP ...]", followed by a body of that many
     * bytes in the gated mode's format (its records at offsets 0, 1, ...).
     */
    private static Rec groupRec(int i, String[] f, byte[] body, int[] at, long next) {
        int n = sized(i, f, body, at, next);
        byte[] sub = Arrays.copyOfRange(body, at[0], at[0] + n);
        List<Rec> members = parse(sub, -1);
        for (Rec m : members)
            if (m.group() != null)
                throw new IllegalArgumentException("record " + i + ": a group inside a group");
        at[0] += n;
        String[] drops = Arrays.copyOfRange(f, 5, f.length);
        return new Rec(next, null, null, null, null, null, new Group(f[3], f[4].equals("-") ? null : f[4], drops, members));
    }

    /** line returns the text up to the next newline from at, and moves at past it. */
    private static String line(byte[] body, int[] at) {
        int i = at[0];
        while (i < body.length && body[i] != '\n')
            i++;
        if (i == body.length)
            throw new IllegalArgumentException("a line without its newline at byte " + at[0]);
        String s = new String(body, at[0], i - at[0], StandardCharsets.US_ASCII);
        at[0] = i + 1;
        return s;
    }
}
