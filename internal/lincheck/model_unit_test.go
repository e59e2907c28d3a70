package lincheck

import (
	"math"
	"testing"

	"github.com/anishathalye/porcupine"
)

// The model's own tests: hand-written histories, no store. Each says
// whether Porcupine must find an order that explains it, so that a model
// that accepts everything (or nothing) fails here.

// hop is one call of a hand-written history: client, interval, call, answer.
type hop struct {
	client    int
	call, ret int64 // ret < 0: no answer (unknown outcome)
	in        input
	out       output
}

func checkHand(ops []hop) bool {
	var h []porcupine.Operation
	for i, o := range ops {
		o.in.Seq = i
		if o.ret < 0 {
			o.ret, o.out = math.MaxInt64/2, output{Unknown: true}
		}
		h = append(h, porcupine.Operation{ClientId: o.client, Input: o.in, Call: o.call, Output: o.out, Return: o.ret})
	}
	return porcupine.CheckOperations(newModel(func(id string) string { return id }), h)
}

func TestModel(t *testing.T) {
	create := hop{0, 0, 1, input{Op: opCreate, ID: "r", Turns: []string{"a", "b"}}, output{}}
	load := func(c int, call, ret int64, vid int, turns ...string) hop {
		return hop{c, call, ret, input{Op: opLoad, ID: "r", Vid: vid}, output{Contents: turns, State: "active"}}
	}
	appendTo := func(c int, call, ret int64, vid int, content string, err string) hop {
		return hop{c, call, ret, input{Op: opAppend, Vid: vid, Content: content}, output{Err: err}}
	}
	tests := []struct {
		name string
		ops  []hop
		want bool
	}{
		{"a load sees the root", []hop{create, load(0, 2, 3, 1, "a", "b")}, true},
		{"a load sees a turn nobody wrote", []hop{create, load(0, 2, 3, 1, "a", "b", "x")}, false},
		{"an append then a load", []hop{create, load(0, 2, 3, 1, "a", "b"), appendTo(0, 4, 5, 1, "c", ""),
			load(1, 6, 7, 2, "a", "b", "c")}, true},
		{"an acknowledged append lost", []hop{create, load(0, 2, 3, 1, "a", "b"), appendTo(0, 4, 5, 1, "c", ""),
			load(1, 6, 7, 2, "a", "b")}, false},
		{"two appends from one value both acknowledged", []hop{create, load(0, 2, 3, 1, "a", "b"), load(1, 2, 3, 2, "a", "b"),
			appendTo(0, 4, 6, 1, "c", ""), appendTo(1, 4, 6, 2, "d", "")}, false},
		{"one of two racing appends conflicts", []hop{create, load(0, 2, 3, 1, "a", "b"), load(1, 2, 3, 2, "a", "b"),
			appendTo(0, 4, 6, 1, "c", ""), appendTo(1, 4, 6, 2, "d", errConflict), load(2, 7, 8, 3, "a", "b", "c")}, true},
		{"a conflict with nothing to conflict with", []hop{create, load(0, 2, 3, 1, "a", "b"), appendTo(0, 4, 5, 1, "c", errConflict)}, false},
		{"an append of unknown outcome seen", []hop{create, load(0, 2, 3, 1, "a", "b"), appendTo(0, 4, -1, 1, "c", ""),
			load(1, 6, 7, 2, "a", "b", "c")}, true},
		{"an append of unknown outcome not seen", []hop{create, load(0, 2, 3, 1, "a", "b"), appendTo(0, 4, -1, 1, "c", ""),
			load(1, 6, 7, 2, "a", "b")}, true},
		{"an append of unknown outcome seen, then unseen", []hop{create, load(0, 2, 3, 1, "a", "b"), appendTo(0, 4, -1, 1, "c", ""),
			load(1, 6, 7, 2, "a", "b", "c"), load(1, 8, 9, 3, "a", "b")}, false},
		{"a merge twice", []hop{create,
			{0, 2, 3, input{Op: opFork, ID: "r", At: 2, NewVid: 1}, output{NewID: "f"}},
			appendTo(0, 4, 5, 1, "c", ""),
			{0, 6, 7, input{Op: opMerge, ID: "f", Content: "m"}, output{}},
			{1, 8, 9, input{Op: opMerge, ID: "f", Content: "n"}, output{}}}, false},
		{"a merge twice, the second refused", []hop{create,
			{0, 2, 3, input{Op: opFork, ID: "r", At: 2, NewVid: 1}, output{NewID: "f"}},
			appendTo(0, 4, 5, 1, "c", ""),
			{0, 6, 7, input{Op: opMerge, ID: "f", Content: "m"}, output{}},
			{1, 8, 9, input{Op: opMerge, ID: "f", Content: "n"}, output{Err: errMerged}},
			load(1, 10, 11, 2, "a", "b", "m")}, true},
		{"a merge acknowledged after a rewind of the child took its own turns (A10)", []hop{create,
			{0, 2, 3, input{Op: opFork, ID: "r", At: 2, NewVid: 1}, output{NewID: "f"}},
			appendTo(0, 4, 5, 1, "c", ""),
			{0, 6, 7, input{Op: opRewind, ID: "f", At: 2}, output{NewID: "z"}},
			{0, 8, 9, input{Op: opMerge, ID: "f", Content: "m"}, output{}}}, false},
		{"a merge racing a rewind of the child, refused", []hop{create,
			{0, 2, 3, input{Op: opFork, ID: "r", At: 2, NewVid: 1}, output{NewID: "f"}},
			appendTo(0, 4, 5, 1, "c", ""),
			{0, 6, 9, input{Op: opRewind, ID: "f", At: 2}, output{NewID: "z"}},
			{1, 6, 9, input{Op: opMerge, ID: "f", Content: "m"}, output{Err: errConflict}},
			load(1, 10, 11, 2, "a", "b")}, true},
		{"a step of a cascade deletes a parent before its fork", []hop{create,
			{0, 2, 3, input{Op: opFork, ID: "r", At: 1, NewVid: 1}, output{NewID: "f"}},
			{0, 4, 5, input{Op: opDelStep, ID: "r"}, output{}}}, false},
		{"a fork from Store.Fork is a tail that appends", []hop{create,
			{0, 2, 3, input{Op: opFork, ID: "r", At: 1, NewVid: 1}, output{NewID: "f"}},
			appendTo(0, 4, 5, 1, "c", ""),
			{0, 6, 7, input{Op: opLoad, ID: "f", Vid: 2}, output{Contents: []string{"a", "c"}, State: "active"}}}, true},
		{"a fork from Store.Fork returns the turns it inherits", []hop{create,
			{0, 2, 3, input{Op: opFork, ID: "r", At: 1, NewVid: 1}, output{NewID: "f", Contents: []string{"a"}}}}, false},
		{"a fork of a tail value lands", []hop{create,
			{0, 2, 3, input{Op: opFork, ID: "r", At: 2, NewVid: 1}, output{NewID: "f"}},
			appendTo(0, 4, 5, 1, "c", ""),
			{0, 6, 7, input{Op: opVFork, Vid: 1, At: 3, NewID: "g", NewVid: 2, Content: "d"}, output{}},
			{0, 8, 9, input{Op: opLoad, ID: "g", Vid: 3}, output{Contents: []string{"a", "b", "c", "d"}, State: "active"}}}, true},
		{"two deletes of one session both acknowledged (A1)", []hop{create,
			{0, 2, 4, input{Op: opDelete, ID: "r"}, output{}},
			{1, 2, 4, input{Op: opDelete, ID: "r"}, output{}}}, false},
		{"of two deletes of one session one answers ErrNotFound", []hop{create,
			{0, 2, 4, input{Op: opDelete, ID: "r"}, output{}},
			{1, 2, 4, input{Op: opDelete, ID: "r"}, output{Err: errNotFound}}}, true},
		{"a fork beyond the end", []hop{create,
			{0, 2, 3, input{Op: opFork, ID: "r", At: 3, NewVid: 1}, output{NewID: "f"}}}, false},
		{"a rewind then a load", []hop{create,
			{0, 2, 3, input{Op: opRewind, ID: "r", At: 1}, output{NewID: "z"}},
			load(0, 4, 5, 1, "a"),
			{0, 6, 7, input{Op: opLoad, ID: "z", Vid: 2}, output{Contents: []string{"a", "b"}, State: "active"}}}, true},
		{"an append of a value loaded before a rewind", []hop{create, load(1, 2, 3, 1, "a", "b"),
			{0, 4, 5, input{Op: opRewind, ID: "r", At: 1}, output{NewID: "z"}},
			load(0, 6, 7, 2, "a"),
			appendTo(1, 8, 9, 1, "c", "")}, false},
		{"an append of a fork's value read before a rewind moved it (A4)", []hop{create,
			{0, 2, 3, input{Op: opFork, ID: "r", At: 2, NewVid: 1}, output{NewID: "f"}},
			{0, 4, 5, input{Op: opRewind, ID: "r", At: 1}, output{NewID: "z"}},
			appendTo(0, 6, 7, 1, "c", "")}, false},
		{"an append of a fork's value read before a rewind moved it, refused", []hop{create,
			{0, 2, 3, input{Op: opFork, ID: "r", At: 2, NewVid: 1}, output{NewID: "f"}},
			{0, 4, 5, input{Op: opRewind, ID: "r", At: 1}, output{NewID: "z"}},
			appendTo(0, 6, 7, 1, "c", errConflict)}, true},
		{"an append of a fork's value read before a detach (A4)", []hop{create,
			{0, 2, 3, input{Op: opFork, ID: "r", At: 0, NewVid: 1}, output{NewID: "f"}},
			{0, 4, 5, input{Op: opDetach, ID: "f"}, output{}},
			appendTo(0, 6, 7, 1, "c", "")}, false},
		{"a shared value written last wins", []hop{create, load(0, 2, 3, 1, "a", "b"),
			{0, 4, 5, input{Op: opAppend, Vid: 1, Content: "c", Delta: `user:u="c"`}, output{}},
			{0, 6, 7, input{Op: opAppend, Vid: 1, Content: "d", Delta: `user:u="d"`}, output{}},
			{0, 8, 9, input{Op: opLoad, ID: "r", Vid: 2}, output{Contents: []string{"a", "b", "c", "d"}, State: "active", Values: `user:u="c"`}}}, false},
		{"a terminal state refuses appends", []hop{create, load(0, 2, 3, 1, "a", "b"),
			{0, 4, 5, input{Op: opSetState, ID: "r", To: "completed"}, output{Changed: true}},
			appendTo(0, 6, 7, 1, "c", "")}, false},
		{"a refused append under faults that landed, lax (known anomaly A5)", []hop{create, load(0, 2, 3, 1, "a", "b"),
			{0, 4, 5, input{Op: opAppend, Vid: 1, Content: "c", Faulty: true, Lax: true}, output{Err: errConflict}},
			load(1, 6, 7, 2, "a", "b", "c")}, true},
		{"a cascade of unknown outcome deletes a fork detached from its tree (A14)", []hop{create,
			{0, 2, 3, input{Op: opFork, ID: "r", At: 1, NewVid: 1}, output{NewID: "f"}},
			{0, 4, 5, input{Op: opDetach, ID: "f"}, output{}},
			{1, 6, -1, input{Op: opCascade, ID: "r"}, output{}},
			{0, 8, 9, input{Op: opInfo, ID: "f"}, output{Err: errNotFound}}}, false},
		{"a cascade of unknown outcome deletes a fork of its tree", []hop{create,
			{0, 2, 3, input{Op: opFork, ID: "r", At: 1, NewVid: 1}, output{NewID: "f"}},
			{1, 4, -1, input{Op: opCascade, ID: "r"}, output{}},
			{0, 6, 7, input{Op: opInfo, ID: "f"}, output{Err: errNotFound}}}, true},
		{"a cascade's step deletes a fork detached from its tree (A14)", []hop{create,
			{0, 2, 3, input{Op: opFork, ID: "r", At: 1, NewVid: 1}, output{NewID: "f"}},
			{0, 4, 5, input{Op: opDetach, ID: "f"}, output{}},
			{1, 6, 7, input{Op: opDelStep, ID: "f", Top: "r"}, output{}}}, false},
		{"a cascade's step deletes a fork of its tree", []hop{create,
			{0, 2, 3, input{Op: opFork, ID: "r", At: 1, NewVid: 1}, output{NewID: "f"}},
			{1, 4, 5, input{Op: opDelStep, ID: "f", Top: "r"}, output{}},
			{0, 6, 7, input{Op: opDetach, ID: "f"}, output{Err: errNotFound}}}, true},
		{"a refused append under faults that landed, strict", []hop{create, load(0, 2, 3, 1, "a", "b"),
			{0, 4, 5, input{Op: opAppend, Vid: 1, Content: "c", Faulty: true}, output{Err: errConflict}},
			load(1, 6, 7, 2, "a", "b", "c")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := checkHand(tt.ops); got != tt.want {
				t.Errorf("linearizable: got %v, want %v", got, tt.want)
			}
		})
	}
}
