package mcp

import "github.com/trails-kg/trails/internal/render"

// TurnJSON is a turn of a history (trails-admin show --json's turns), a
// structured turn's fields inlined as the JSONL export writes them
// (admin.StructureJSON). It is render.Turn, the one JSON form of a turn
// both commands print.
type TurnJSON = render.Turn

// form is how the tools' text renderings differ from trails-admin's
// (render.Form): every turn's first line trimmed, items built of words,
// the sessions table's TAGS column always, audit cells as stored, the
// brief header of a shown session.
var form = render.Form{TrimTurns: true, Words: true, TagsColumn: true, PlainCells: true, Brief: true}
