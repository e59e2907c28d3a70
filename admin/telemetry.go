package admin

import "github.com/trails-kg/trails/internal/telemetry"

// The spans of a Dataset's and a Server's exported calls are named
// "admin." and the method (admin.Check, admin.Compact), children of the
// caller's span, with gen_ai.conversation.id where the call names one
// session (an Export of one id); their store requests are kg's spans
// under them, and a Server's admin-API requests client spans of their own
// (internal/telemetry).
func init() {
	telemetry.RegisterErrors(ErrSHACLNotRun, ErrUnsupported, ErrTaskFailed, ErrNotEmpty)
}

// oneSession returns the session a call naming ids acts on: ids[0] when
// there is one, else "" (all of them, or several).
func oneSession(ids []string) string {
	if len(ids) == 1 {
		return ids[0]
	}
	return ""
}
