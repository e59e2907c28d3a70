package cluster

// Prefer makes replica i the one c prefers, known to have applied c's
// position: as when replica i answers the outcome of c's write (saw).
func Prefer(c *Client, i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pref, c.prefAt = i, c.last
}

// DieBeforeShare makes each write of shared values across groups stop
// after its first record, as a writer that dies there, until restore.
func DieBeforeShare() (restore func()) {
	beforeShare = func() bool { return true }
	return func() { beforeShare = nil }
}

// DieBeforeCopy makes each MoveTree stop after its seal, as a mover that
// dies there, until restore.
func DieBeforeCopy() (restore func()) {
	beforeCopy = func() bool { return true }
	return func() { beforeCopy = nil }
}

// Decided returns how many records a applied as data (decide.go).
func Decided(a *Applier) int64 { return a.decided.Load() }

// Groups returns how many group commits' records a applied as data.
func Groups(a *Applier) int64 { return a.groups.Load() }

// Patches reports whether a sends the appends it decided as RDF Patch.
func Patches(a *Applier) bool { return a.patches() }
