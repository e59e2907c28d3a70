package render

// Form selects among the small differences between the text forms the
// front ends print, so that each keeps its output to the byte. The zero
// Form is trails-admin's (and the package functions' Turns, Items,
// Sessions, Cell); trails-mcp's tools set every field. A Form is a value:
// safe for concurrent use.
type Form struct {
	// TrimTurns trims the trailing spaces of every turn's first line, not
	// only of a structured turn's.
	TrimTurns bool
	// Words builds an item's line of words joined by one space, the
	// empty ones left out, as trails-mcp does: a call with no tool name
	// reads "→ [c1]", not "→  [c1]"; a result keeps its tool name as
	// stored; a state or metadata key "" reads "= 1", not " = 1"; a part of
	// a kind Trails does not know shows its text.
	Words bool
	// TagsColumn gives the sessions table its TAGS column always, not only
	// when a session listed has tags.
	TagsColumn bool
	// PlainCells writes an audit cell as the term's text as stored (a time
	// not brought to one width), IRIs cut to the cell's width as other
	// values are.
	PlainCells bool
	// Brief writes a shown session's header as trails-mcp does: each
	// field through Field (left out when empty), the fork record whole
	// whenever there is one (its anchor's and turn's IRIs on lines of
	// their own), and tags, anchors and merges on short lines that do not
	// say what is not signed.
	Brief bool
}
