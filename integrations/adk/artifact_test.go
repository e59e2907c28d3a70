package adk_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"

	"github.com/trails-kg/trails/integrations/adk"
	"github.com/trails-kg/trails/internal/clustertest"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	trails "github.com/trails-kg/trails/session"
)

// newArtifacts returns an artifact service over tb's dataset, wiped, and
// a client of it.
func newArtifacts(tb testing.TB) (*adk.ArtifactService, *kg.Client) {
	tb.Helper()
	c := fusekitest.Empty(tb)
	return adk.NewArtifactService(clustertest.Querier(tb, c)), c
}

// artifacts is a session's view of an artifact service, for short tests.
type artifacts struct {
	tb                 testing.TB
	svc                *adk.ArtifactService
	app, user, session string
}

func (a artifacts) save(name string, p *genai.Part) int64 {
	a.tb.Helper()
	got, err := a.svc.Save(a.tb.(*testing.T).Context(), &artifact.SaveRequest{AppName: a.app, UserID: a.user, SessionID: a.session, FileName: name, Part: p})
	if err != nil {
		a.tb.Fatalf("save %s: %v", name, err)
	}
	return got.Version
}

func (a artifacts) load(name string, v int64) (*genai.Part, error) {
	got, err := a.svc.Load(a.tb.(*testing.T).Context(), &artifact.LoadRequest{AppName: a.app, UserID: a.user, SessionID: a.session, FileName: name, Version: v})
	if err != nil {
		return nil, err
	}
	return got.Part, nil
}

func (a artifacts) del(name string, v int64) {
	a.tb.Helper()
	if err := a.svc.Delete(a.tb.(*testing.T).Context(), &artifact.DeleteRequest{AppName: a.app, UserID: a.user, SessionID: a.session, FileName: name, Version: v}); err != nil {
		a.tb.Fatalf("delete %s@%d: %v", name, v, err)
	}
}

func (a artifacts) list() []string {
	a.tb.Helper()
	got, err := a.svc.List(a.tb.(*testing.T).Context(), &artifact.ListRequest{AppName: a.app, UserID: a.user, SessionID: a.session})
	if err != nil {
		a.tb.Fatalf("list: %v", err)
	}
	return got.FileNames
}

func (a artifacts) versions(name string) ([]int64, error) {
	got, err := a.svc.Versions(a.tb.(*testing.T).Context(), &artifact.VersionsRequest{AppName: a.app, UserID: a.user, SessionID: a.session, FileName: name})
	if err != nil {
		return nil, err
	}
	return got.Versions, nil
}

func blob(s string) *genai.Part { return genai.NewPartFromBytes([]byte(s), "text/plain") }

// TestArtifacts follows ADK's own suite for artifact services (its
// in-memory service passes it), for session-scoped and user-scoped
// names: versions from 1, loads of the latest and of a version, the list
// and the versions, a version deleted, then a file.
func TestArtifacts(t *testing.T) {
	fusekitest.Parallel(t)
	fusekitest.Endpoint(t) // the dataset of both cases, wiped by each
	for _, scope := range []string{"", "user:"} {
		t.Run("scope="+scope, func(t *testing.T) {
			svc, _ := newArtifacts(t)
			a := artifacts{t, svc, "testapp", "testuser", "testsession"}
			f1, f2, f3 := scope+"file1", "file2", scope+"file3"
			for i, s := range []struct {
				name string
				part *genai.Part
				want int64
			}{{f1, blob("file v1"), 1}, {f1, blob("file v2"), 2}, {f1, blob("file v3"), 3}, {f2, blob("file v3"), 1}, {f3, genai.NewPartFromText("file v1"), 1}} {
				if got := a.save(s.name, s.part); got != s.want {
					t.Errorf("save %d (%s): got version %d, want %d", i, s.name, got, s.want)
				}
			}
			// A user-scoped file is the user's whatever the session.
			reader := a
			if scope != "" {
				reader.session = "another session"
			}
			for _, c := range []struct {
				v    int64
				want string
			}{{0, "file v3"}, {1, "file v1"}, {2, "file v2"}} {
				got, err := reader.load(f1, c.v)
				if err != nil || !cmp.Equal(got, blob(c.want)) {
					t.Errorf("load %s@%d: got %v, %v, want %v", f1, c.v, got, err, blob(c.want))
				}
			}
			if got, err := a.load(f3, 0); err != nil || !cmp.Equal(got, genai.NewPartFromText("file v1")) {
				t.Errorf("load %s: got %v, %v", f3, got, err)
			}
			want := []string{f1, f2, f3}
			slices.Sort(want)
			if got := a.list(); !slices.Equal(got, want) {
				t.Errorf("list: got %v, want %v", got, want)
			}
			if got, err := a.versions(f1); err != nil || !slices.Equal(got, []int64{3, 2, 1}) {
				t.Errorf("versions: got %v, %v, want [3 2 1]", got, err)
			}
			a.del(f1, 3)
			if got, err := a.load(f1, 0); err != nil || !cmp.Equal(got, blob("file v2")) {
				t.Errorf("load after deleting v3: got %v, %v, want file v2", got, err)
			}
			if _, err := a.load(f1, 3); !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, adk.ErrNoArtifact) {
				t.Errorf("load of deleted v3: got %v, want ErrNoArtifact", err)
			}
			a.del(f1, 0)
			if _, err := a.load(f1, 0); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("load after delete: got %v, want fs.ErrNotExist", err)
			}
			want = []string{f2, f3}
			slices.Sort(want)
			if got := a.list(); !slices.Equal(got, want) {
				t.Errorf("list after delete: got %v, want %v", got, want)
			}
			if _, err := a.versions(f1); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("versions after delete: got %v, want fs.ErrNotExist", err)
			}
			// A number is never given twice: the next save is version 4.
			if got := a.save(f1, blob("file v4")); got != 4 {
				t.Errorf("save after delete: got version %d, want 4", got)
			}
			a.del(f1, 0)
			a.del(f2, 0)
			a.del(f3, 0)
			if got := a.list(); len(got) != 0 {
				t.Errorf("list after deleting all: got %v", got)
			}
		})
	}
}

// TestArtifactsEmpty: on an empty store, loads and versions are
// fs.ErrNotExist, the list is empty, a delete does nothing.
func TestArtifactsEmpty(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := t.Context()
	svc, _ := newArtifacts(t)
	a := artifacts{t, svc, "app", "user", "session"}
	if _, err := a.load("file", 0); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("load: got %v, want fs.ErrNotExist", err)
	}
	if got := a.list(); len(got) != 0 {
		t.Errorf("list: got %v", got)
	}
	a.del("file1", 0)
	if _, err := a.versions("file1"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("versions: got %v, want fs.ErrNotExist", err)
	}
	_, err := svc.GetArtifactVersion(ctx, &artifact.GetArtifactVersionRequest{AppName: "app", UserID: "user", SessionID: "session", FileName: "file1"})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("get artifact version: got %v, want fs.ErrNotExist", err)
	}
}

// TestArtifactVersion: a version's metadata, the latest's or a given
// one's: its number, MIME type, creation time and the IRI of its turn;
// an unknown version or file is fs.ErrNotExist.
func TestArtifactVersion(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := t.Context()
	svc, _ := newArtifacts(t)
	a := artifacts{t, svc, "testapp", "testuser", "testsession"}
	for _, s := range []string{"v1", "v2", "v3"} {
		a.save("verfile", genai.NewPartFromBytes([]byte(s), "image/png"))
	}
	for _, c := range []struct{ ask, want int64 }{{0, 3}, {2, 2}} {
		got, err := svc.GetArtifactVersion(ctx, &artifact.GetArtifactVersionRequest{AppName: "testapp", UserID: "testuser", SessionID: "testsession", FileName: "verfile", Version: c.ask})
		if err != nil {
			t.Fatal(err)
		}
		v := got.ArtifactVersion
		if v.Version != c.want || v.MimeType != "image/png" || v.CreateTime.IsZero() || v.CanonicalURI == "" {
			t.Errorf("version %d: got %+v, want version %d of image/png with a time and a URI", c.ask, v, c.want)
		}
	}
	for _, r := range []*artifact.GetArtifactVersionRequest{
		{AppName: "testapp", UserID: "testuser", SessionID: "testsession", FileName: "verfile", Version: 99},
		{AppName: "testapp", UserID: "testuser", SessionID: "testsession", FileName: "does-not-exist"},
		{AppName: "testapp", UserID: "other", SessionID: "testsession", FileName: "verfile"},
		{AppName: "other", UserID: "testuser", SessionID: "testsession", FileName: "verfile"},
	} {
		if _, err := svc.GetArtifactVersion(ctx, r); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%+v: got %v, want fs.ErrNotExist", r, err)
		}
	}
}

// TestArtifactsInvalid: requests ADK's validation refuses, negative
// versions and a version already given are refused with typed errors and
// change nothing; hostile names are stored and read back as given.
func TestArtifactsInvalid(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := t.Context()
	svc, c := newArtifacts(t)
	a := artifacts{t, svc, "app", "u1", "s1"}
	a.save("f", blob("one"))
	for i, r := range []*artifact.SaveRequest{nil, {UserID: "u1", SessionID: "s1", FileName: "f", Part: blob("x")},
		{AppName: "app", UserID: "u1", SessionID: "s1", FileName: "a/b", Part: blob("x")},
		{AppName: "app", UserID: "u1", SessionID: "s1", FileName: "f"},
		{AppName: "app", UserID: "u1", SessionID: "s1", FileName: "f", Part: &genai.Part{}},
		{AppName: "app", UserID: "u1", SessionID: "s1", FileName: "f", Part: blob("x"), Version: -1}} {
		if _, err := svc.Save(ctx, r); !errors.Is(err, adk.ErrInvalid) {
			t.Errorf("save %d: got %v, want ErrInvalid", i, err)
		}
	}
	if _, err := svc.Save(ctx, &artifact.SaveRequest{AppName: "app", UserID: "u1", SessionID: "s1", FileName: "f", Part: blob("x"), Version: 1}); !errors.Is(err, adk.ErrVersionTaken) {
		t.Errorf("save of version 1 again: got %v, want ErrVersionTaken", err)
	}
	if _, err := svc.Load(ctx, nil); !errors.Is(err, adk.ErrInvalid) {
		t.Errorf("load nil: got %v, want ErrInvalid", err)
	}
	if _, err := svc.Load(ctx, &artifact.LoadRequest{AppName: "app", UserID: "u1", SessionID: "s1", FileName: "f", Version: -2}); !errors.Is(err, adk.ErrInvalid) {
		t.Errorf("load of version -2: got %v, want ErrInvalid", err)
	}
	if err := svc.Delete(ctx, &artifact.DeleteRequest{AppName: "app", UserID: "u1", FileName: "f"}); !errors.Is(err, adk.ErrInvalid) {
		t.Errorf("delete without session: got %v, want ErrInvalid", err)
	}
	if _, err := svc.List(ctx, &artifact.ListRequest{AppName: "app", UserID: "u1"}); !errors.Is(err, adk.ErrInvalid) {
		t.Errorf("list without session: got %v, want ErrInvalid", err)
	}
	if _, err := svc.Versions(ctx, nil); !errors.Is(err, adk.ErrInvalid) {
		t.Errorf("versions nil: got %v, want ErrInvalid", err)
	}
	if got, err := a.versions("f"); err != nil || !slices.Equal(got, []int64{1}) {
		t.Errorf("after the refusals: versions %v, %v, want [1]", got, err)
	}
	// Explicit versions may skip numbers; the next is above them.
	if r, err := svc.Save(ctx, &artifact.SaveRequest{AppName: "app", UserID: "u1", SessionID: "s1", FileName: "f", Part: blob("ten"), Version: 10}); err != nil || r.Version != 10 {
		t.Fatalf("save of version 10: got %v, %v", r, err)
	}
	if got := a.save("f", blob("eleven")); got != 11 {
		t.Errorf("next save: got version %d, want 11", got)
	}
	// Names, sessions and users made to break out of a string or an IRI.
	if _, err := svc.Save(ctx, &artifact.SaveRequest{AppName: "app", UserID: "u1\x00", SessionID: "s1", FileName: "f", Part: blob("x")}); !errors.Is(err, adk.ErrInvalid) {
		t.Errorf("save for a user id with NUL: got %v, want ErrInvalid", err)
	}
	h := artifacts{t, svc, `app" } ; DROP ALL ; #`, `u1> "`, "s1\n<x>"}
	name := `user:"} .` + "\t\u202e"
	part := &genai.Part{Text: "text \" } and", InlineData: &genai.Blob{Data: []byte{0, 1, 2, 0xff}, MIMEType: "application/octet-stream"}}
	h.save(name, part)
	if got, err := h.load(name, 1); err != nil || !cmp.Equal(got, part) {
		t.Errorf("hostile load: got %v, %v, want %v", got, err, part)
	}
	if n, err := trails.NewStore(clustertest.Querier(t, c)).List(ctx); err != nil || len(n) != 2 {
		t.Errorf("artifact logs stored: %d, %v, want 2", len(n), err)
	}
}

// TestArtifactsConcurrent: saves racing on one file each get their own
// version (run with -race).
func TestArtifactsConcurrent(t *testing.T) {
	fusekitest.Parallel(t)
	svc, _ := newArtifacts(t)
	a := artifacts{t, svc, "app", "u1", "s1"}
	a.save("f", blob("first")) // the log exists: the racers append
	var wg sync.WaitGroup
	var mu sync.Mutex
	var got []int64
	for i := range 3 {
		wg.Go(func() {
			r, err := svc.Save(t.Context(), &artifact.SaveRequest{AppName: "app", UserID: "u1", SessionID: "s1", FileName: "f", Part: blob(fmt.Sprint(i))})
			if err != nil {
				t.Errorf("save %d: %v", i, err)
				return
			}
			mu.Lock()
			got = append(got, r.Version)
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(got)
	if !slices.Equal(got, []int64{2, 3, 4}) {
		t.Errorf("got versions %v, want [2 3 4]", got)
	}
}

// noteModel answers "save NAME: TEXT" with a call of the note tool, and
// the tool's response with a text.
type noteModel struct{}

func (noteModel) Name() string { return "note-model" }

func (noteModel) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		last := req.Contents[len(req.Contents)-1]
		c := genai.NewContentFromText("saved", genai.RoleModel)
		if p := last.Parts[0]; p.FunctionResponse == nil {
			c = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{
				ID: "call-note-1", Name: "save_note", Args: map[string]any{"text": p.Text}}}}}
		}
		yield(&model.LLMResponse{Content: c, TurnComplete: true}, nil)
	}
}

type noteArgs struct {
	Text string `json:"text"`
}

// TestArtifactsFromTool runs an ADK agent whose tool saves an artifact,
// with the Trails session and artifact services: the tool's event
// records the version ADK got, Load returns the note, and in PROV the
// version was generated by the tool's call in the session's history.
func TestArtifactsFromTool(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := t.Context()
	svc, c := newArtifacts(t)
	sessions := adk.NewSessionService(trails.NewStore(clustertest.Querier(t, c)))
	note, err := functiontool.New(functiontool.Config{Name: "save_note", Description: "Saves a note."},
		func(tc agent.Context, args noteArgs) (map[string]any, error) {
			r, err := tc.Artifacts().Save(tc, "note.txt", genai.NewPartFromText(args.Text))
			if err != nil {
				return nil, err
			}
			return map[string]any{"version": r.Version}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	a, err := llmagent.New(llmagent.Config{Name: "notes", Model: noteModel{}, Tools: []tool.Tool{note}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "app", Agent: a, SessionService: sessions, ArtifactService: svc})
	if err != nil {
		t.Fatal(err)
	}
	created, err := sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	delta := map[string]int64{}
	for ev, err := range r.Run(ctx, "u1", created.Session.ID(), genai.NewContentFromText("buy milk", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range ev.Actions.ArtifactDelta {
			delta[k] = v
		}
	}
	if delta["note.txt"] != 1 {
		t.Errorf("artifact delta: got %v, want note.txt version 1", delta)
	}
	got, err := svc.Load(ctx, &artifact.LoadRequest{AppName: "app", UserID: "u1", SessionID: created.Session.ID(), FileName: "note.txt"})
	if err != nil || got.Part.Text != "buy milk" {
		t.Fatalf("load: got %v, %v, want the note", got, err)
	}
	v, err := svc.GetArtifactVersion(ctx, &artifact.GetArtifactVersionRequest{AppName: "app", UserID: "u1", SessionID: created.Session.ID(), FileName: "note.txt"})
	if err != nil {
		t.Fatal(err)
	}
	q, err := kg.Bind(`PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
ASK { $version prov:wasGeneratedBy ?call ; trails:author "notes" ; trails:invocationId ?inv .
      ?call a trails:ToolCall ; trails:toolCallId "call-note-1" ; prov:used ?p .
      ?p trails:partOf ?turn . ?turn trails:session $session }`, kg.Params{
		"version": kg.MustIRI(v.ArtifactVersion.CanonicalURI),
		"session": kg.MustIRI(ontology.SessionIRI(created.Session.ID())),
	})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := c.Ask(ctx, q); err != nil || !ok {
		t.Errorf("the version's PROV link to its tool call: got %v, %v, want true", ok, err)
	}
	// A second version revises the first.
	for _, err := range r.Run(ctx, "u1", created.Session.ID(), genai.NewContentFromText("buy bread", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	v2, err := svc.GetArtifactVersion(ctx, &artifact.GetArtifactVersionRequest{AppName: "app", UserID: "u1", SessionID: created.Session.ID(), FileName: "note.txt"})
	if err != nil || v2.ArtifactVersion.Version != 2 {
		t.Fatalf("second version: got %v, %v", v2, err)
	}
	q, _ = kg.Bind(`PREFIX prov: <http://www.w3.org/ns/prov#> ASK { $v2 prov:wasRevisionOf $v1 }`,
		kg.Params{"v2": kg.MustIRI(v2.ArtifactVersion.CanonicalURI), "v1": kg.MustIRI(v.ArtifactVersion.CanonicalURI)})
	if ok, err := c.Ask(ctx, q); err != nil || !ok {
		t.Errorf("version 2 prov:wasRevisionOf version 1: got %v, %v, want true", ok, err)
	}
	// The session's events are ADK's alone: no artifact turn among them.
	g, err := sessions.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u1", SessionID: created.Session.ID()})
	if err != nil {
		t.Fatal(err)
	}
	for ev := range g.Session.Events().All() {
		if ev.Author == "" {
			t.Errorf("an event without author: %+v", ev)
		}
	}
	if l, err := sessions.List(ctx, &session.ListRequest{AppName: "app"}); err != nil || len(l.Sessions) != 1 {
		t.Errorf("sessions listed: %v, %v, want the one (not the artifact log)", l, err)
	}
}
