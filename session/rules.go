package session

// The rules Persist applies to what it stores, exported for the tools that
// write or read sessions by other means: the operators' Import and Check
// (package admin) refuse and report what Persist would refuse, by these
// same rules.

// MaxRoleBytes is the longest role, in bytes, Persist accepts.
const MaxRoleBytes = maxRoleBytes

// CheckID returns ErrInvalid unless id is a session id Persist accepts: a
// UUID in canonical form.
func CheckID(id string) error { return checkID(id) }

// CheckHeader returns ErrInvalid unless the fields of s that Persist
// stores with a new session are valid: its id, principal, branch label,
// TTL, kind and fork link (a fork point of at least 0, without bounding it
// by the history).
func (s *Session) CheckHeader() error { return s.checkHeader() }

// CheckTurn returns ErrInvalid unless turn t is one Persist accepts: a
// non-empty UTF-8 role of at most MaxRoleBytes, UTF-8 content of at most
// MaxTurnBytes, a branch label, a creation time in years 0000 to 9999
// (kg.CheckTime).
func CheckTurn(t Turn) error { return checkTurn(t) }

// CheckTurnBranch returns ErrInvalid unless s would write turn t under its
// own branch label: only a detached root holds turns of other branches
// (the copies of its former prefix).
func (s *Session) CheckTurnBranch(t Turn) error { return s.checkTurnBranch(t) }

// HeadDigest returns the trails:headDigest Persist stores for a session
// whose own turns are turns.
func HeadDigest(turns []Turn) string { return digest(turns) }
