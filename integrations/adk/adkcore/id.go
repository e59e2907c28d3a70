package adkcore

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"
	trails "github.com/trails-kg/trails/session"
)

// How ADK's session keys map onto Trails. An ADK session is keyed by app
// name, user id and session id; a Trails session by a canonical UUID, and
// it has an App and a Principal. So: App is the app name, Principal the
// user id, and the Trails id is the ADK session id when that is a
// canonical UUID (what Create generates when given none), else a UUIDv5
// derived from the app name, the user id and the session id together
// (two users may each have a session "s1"). The ADK id of a derived one
// is kept in a tag of the session, as is its app name (for List):
//
//	adk.app:NAME     the app name, when it is printable ASCII without spaces and fits;
//	adk.app#SHA256   else the hex SHA-256 of the app name
//	adk.id:ID        the ADK session id, when it is printable ASCII without spaces and fits;
//	adk.id64:B64     else its unpadded base64url
//
// A tag holds at most 128 characters, so an ADK session id that is not a
// UUID may have at most 89 bytes (121 printable ASCII characters).

// Tag prefixes (see above).
const (
	tagApp     = "adk.app:"
	tagAppHash = "adk.app#"
	tagID      = "adk.id:"
	tagID64    = "adk.id64:"
	maxTag     = 128 // Trails' longest tag
)

// idSpace is the UUIDv5 namespace of the Trails ids derived from ADK
// session ids that are not UUIDs.
var idSpace = uuid.MustParse("6f1d4c7e-3b0a-4d55-9a53-5e0b8f3c2a71")

// isUUID reports whether id is a canonical UUID, which Trails takes as is.
func isUUID(id string) bool {
	u, err := uuid.Parse(id)
	return err == nil && u.String() == id
}

// TrailsID returns the Trails id of ADK session id of user in app.
func TrailsID(app, user, id string) string {
	if isUUID(id) {
		return id
	}
	name, _ := json.Marshal([]string{app, user, id}) // unambiguous whatever the strings hold
	return uuid.NewSHA1(idSpace, name).String()
}

// plainTag reports whether v can follow a prefix p in a tag as it is:
// printable ASCII without spaces, the whole tag at most maxTag bytes.
func plainTag(p, v string) bool {
	if v == "" || len(p)+len(v) > maxTag {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x21 || v[i] > 0x7e {
			return false
		}
	}
	return true
}

// AppTag returns the tag that marks the sessions of app.
func AppTag(app string) string {
	if plainTag(tagApp, app) {
		return tagApp + app
	}
	h := sha256.Sum256([]byte(app))
	return tagAppHash + hex.EncodeToString(h[:])
}

// IDTag returns the tag that records ADK session id, "" when the Trails id
// is id itself; ErrInvalid when id is too long for a tag.
func IDTag(id string) (string, error) {
	switch {
	case isUUID(id):
		return "", nil
	case plainTag(tagID, id):
		return tagID + id, nil
	}
	t := tagID64 + base64.RawURLEncoding.EncodeToString([]byte(id))
	if len(t) > maxTag {
		return "", fmt.Errorf("%w: session id of %d bytes: one that is not a UUID may have at most 89", ErrInvalid, len(id))
	}
	return t, nil
}

// ADKID returns the ADK session id of the Trails session info describes.
func ADKID(info trails.Info) string {
	for _, t := range info.Tags {
		if v, ok := strings.CutPrefix(t, tagID); ok {
			return v
		}
		if v, ok := strings.CutPrefix(t, tagID64); ok {
			if b, err := base64.RawURLEncoding.DecodeString(v); err == nil {
				return string(b)
			}
		}
	}
	return info.ID
}
