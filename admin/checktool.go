package admin

import (
	"context"
	"fmt"

	"github.com/trails-kg/trails/internal/termsafe"
)

// The query of the tool-result rule.
var qCheckToolResult = query("check-tool-result.rq")

// checkToolResult reports every tool result whose call is not in the
// effective history before it (RuleToolResult): a tool result part whose
// call id no earlier tool call part of that history carries, or a turn
// prov:wasGeneratedBy a trails:ToolCall outside it. Persist writes the
// first kind as it is given (a result may answer a call the agent never
// stored) and links a result only to a call it finds, so the second comes
// from data written or edited by other means.
func (ds *Dataset) checkToolResult(ctx context.Context) ([]Finding, error) {
	res, err := ds.c.Select(ctx, qCheckToolResult)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, row := range res.Solutions {
		turn := row.String("turn")
		switch row.String("why") {
		case "no-call":
			tool := ""
			if _, ok := row["tool"]; ok {
				tool = ", tool " + termsafe.Quote(row.String("tool"))
			}
			out = append(out, Finding{RuleToolResult, turn, fmt.Sprintf(
				"tool result part %s (call id %s%s) answers no tool call: no earlier tool call part of the turn's effective history carries its call id",
				row.String("k"), termsafe.Quote(row.String("id")), tool)})
		case "outside":
			out = append(out, Finding{RuleToolResult, turn, fmt.Sprintf(
				"the turn is prov:wasGeneratedBy tool call <%s>, which is not in the turn's effective history before it",
				termsafe.String(row.String("call")))})
		}
	}
	return out, nil
}
