package cluster

// Prefer makes replica i the one c prefers, known to have applied c's
// position: as when replica i answers the outcome of c's write (saw).
func Prefer(c *Client, i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pref, c.prefAt = i, c.last
}
