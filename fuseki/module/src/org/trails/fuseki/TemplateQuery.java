package org.trails.fuseki;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

import org.apache.jena.atlas.RuntimeIOException;
import org.apache.jena.fuseki.servlets.ActionErrorException;
import org.apache.jena.fuseki.servlets.HttpAction;
import org.apache.jena.fuseki.servlets.ServletOps;
import org.apache.jena.query.Query;
import org.apache.jena.riot.resultset.ResultSetLang;
import org.apache.jena.shared.JenaException;
import org.apache.jena.sparql.core.DatasetGraph;
import org.apache.jena.sparql.engine.binding.Binding;
import org.apache.jena.sparql.exec.QueryExec;
import org.apache.jena.sparql.exec.RowSet;
import org.apache.jena.sparql.resultset.ResultsWriter;

/**
 * TemplateQuery answers a SELECT query given as a template and the
 * values of its variables, as the dataset's query endpoint answers the
 * query with the values in its text, in tab-separated values.
 *
 * Request: POST, the template's UTF-8 text as the body (any media type;
 * application/sparql-query by convention), and a parameter bind for each
 * variable, "NAME\tTERM", TERM an RDF term in N-Triples syntax (Jena's
 * substitution: as if the term stood in the text for the variable).
 * Answer: 200, text/tab-separated-values; 400 for a template that is not
 * a SELECT or cannot be parsed, or a binding it cannot read.
 *
 * The server parses a template once per request thread and keeps it
 * (Templates); a request binds the parsed template, which costs some
 * microseconds. A Trails Store sends the query that
 * starts every load so (the chain query). The evaluation runs in a read
 * transaction on the dataset, with the dataset's context (its union
 * default graph). Fuseki's query timeout does not apply to it.
 */
public class TemplateQuery extends PostOnly {
    @Override
    String allowed() {
        return "template query: POST a SELECT template";
    }

    @Override
    protected void doPost(HttpAction action) {
        String text;
        try (InputStream in = action.getRequestInputStream()) {
            text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException | RuntimeIOException e) {
            ServletOps.errorBadRequest("template query: reading the body: " + e.getMessage());
            return;
        }
        Query q;
        Binding bind;
        try {
            q = Templates.parsed(text);
            if (!q.isSelectType())
                throw new IllegalArgumentException("the template is not a SELECT");
            String[] binds = action.getRequestParameterValues("bind");
            bind = Templates.binding(binds == null ? List.of() : Arrays.asList(binds), "");
        } catch (JenaException | IllegalArgumentException e) {
            ServletOps.errorBadRequest("template query: " + e.getMessage());
            return;
        }
        action.beginRead();
        try {
            DatasetGraph dsg = action.getActiveDSG();
            RowSet rows = QueryExec.dataset(dsg).query(q).substitution(bind).select();
            action.setResponseStatus(200);
            action.setResponseContentType(ResultSetLang.RS_TSV.getHeaderString() + "; charset=utf-8");
            OutputStream out = action.getResponseOutputStream();
            ResultsWriter.create().lang(ResultSetLang.RS_TSV).write(out, rows);
            out.flush();
        } catch (ActionErrorException e) {
            throw e;
        } catch (IOException e) {
            throw new RuntimeIOException(e);
        } finally {
            action.end();
        }
    }
}
