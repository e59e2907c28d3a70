package session

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/trails-kg/trails/internal/termsafe"
)

// maxLabel is the longest anchor name or tag, in characters.
const maxLabel = 128

// CheckTag returns an error wrapping ErrInvalid unless t is a tag Store.Tag
// and Session.Tags accept (see Tag): for a caller that derives tags from
// names of its own and must know beforehand whether one can be stored.
func CheckTag(t string) error { return checkLabel("tag", t) }

// checkLabel returns ErrInvalid unless s is a valid anchor name or tag:
// 1 to maxLabel characters of UTF-8, none of them white space, a control
// character (C0, DEL, C1) or a bidi control (U+202A–U+202E, U+2066–U+2069,
// U+200E, U+200F, U+061C: termsafe.Unsafe), so that a label prints on a
// terminal as it reads and cannot reorder the text around it. The error
// quotes s escaped and cut to termsafe.MaxQuoted characters.
func checkLabel(what, s string) error {
	n := utf8.RuneCountInString(s)
	if s == "" || n > maxLabel || !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s %s must be 1 to %d characters of UTF-8", ErrInvalid, what, termsafe.Quote(s), maxLabel)
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || termsafe.Unsafe(r) {
			return fmt.Errorf("%w: %s %s holds white space, a control character or a bidi control (%U)", ErrInvalid, what, termsafe.Quote(s), r)
		}
	}
	return nil
}
