package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// The errors of the work done through Fuseki's admin API (Server) and of
// Restore.
var (
	// ErrUnsupported: the store has no admin API for the operation: it is
	// not Fuseki (Oxigraph, a generic SPARQL endpoint, the Kafka-fed
	// cluster), or it is Fuseki's plain server (FusekiMainCmd), which does
	// not serve /$/compact and /$/backup; scripts/fuseki start runs the
	// one that does (FusekiServerCmd).
	ErrUnsupported = errors.New("admin: not supported by the store")
	// ErrTaskFailed: the server ran the task and reported that it failed;
	// its log says why. Compacting an in-memory dataset fails so: Fuseki
	// compacts TDB2 databases on disk only.
	ErrTaskFailed = errors.New("admin: the server's task failed")
	// ErrNotEmpty: Restore was asked to load a backup into a dataset that
	// holds data, without replace.
	ErrNotEmpty = errors.New("admin: the dataset is not empty")
)

// ServerConfig says how to reach the admin API of a dataset's server.
type ServerConfig struct {
	// Endpoint is the dataset's URL, http://HOST:PORT/NAME, as in
	// kg.Config: the admin API is at http://HOST:PORT/$/, and the dataset
	// is NAME.
	Endpoint string
	// Store is the store's profile; anything but kg.Fuseki (or "", taken
	// as Fuseki) has no admin API (ErrUnsupported).
	Store kg.Store
	// Username and Password, when set, are sent as HTTP basic auth.
	Username, Password string
	// HTTPClient sends the requests; nil means a client of its own with a
	// time limit of Timeout per request.
	HTTPClient *http.Client
	// Timeout bounds each request when HTTPClient is nil (default 30 s);
	// waiting for a task is bounded by the context only.
	Timeout time.Duration
	// Poll is how often a task's state is asked for (default 250 ms).
	Poll time.Duration
}

// Server is the admin API of the Fuseki server holding one dataset (its
// /$/ paths): compaction and backups, which SPARQL does not reach. Fuseki
// serves it from the server scripts/fuseki starts (FusekiServerCmd), to
// requests from the server's own machine (and, with a password file, only
// to its admin user). A Server holds no connection of its own; it is safe
// for concurrent use.
type Server struct {
	base    string // http://HOST:PORT, with the context path if any
	dataset string
	cfg     ServerConfig
	hc      *http.Client
}

// NewServer returns the admin API of cfg.Endpoint's server. It sends
// nothing. It returns an error wrapping ErrUnsupported for a store other
// than Fuseki, and one wrapping session.ErrInvalid for an endpoint that
// is not an http(s) URL with a dataset name as its last path segment.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.Store != "" && cfg.Store != kg.Fuseki {
		return nil, fmt.Errorf("%w: %s has no admin API (Fuseki's /$/compact and /$/backup)", ErrUnsupported, cfg.Store)
	}
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: endpoint %q: want the dataset's URL, http://HOST:PORT/NAME", session.ErrInvalid, cfg.Endpoint)
	}
	path := strings.TrimSuffix(u.Path, "/")
	i := strings.LastIndexByte(path, '/')
	name := path[i+1:]
	if i < 0 || name == "" || name == "$" {
		return nil, fmt.Errorf("%w: endpoint %q names no dataset (want http://HOST:PORT/NAME)", session.ErrInvalid, cfg.Endpoint)
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 250 * time.Millisecond
	}
	hc := cfg.HTTPClient
	if hc == nil {
		t := cfg.Timeout
		if t <= 0 {
			t = 30 * time.Second
		}
		hc = &http.Client{Timeout: t}
	}
	base := url.URL{Scheme: u.Scheme, Host: u.Host, Path: path[:i]}
	return &Server{base: base.String(), dataset: name, cfg: cfg, hc: hc}, nil
}

// Dataset returns the name of the dataset, the last segment of the
// endpoint's path.
func (s *Server) Dataset() string { return s.dataset }

// Task is the state of a task the server ran (Fuseki's /$/tasks/ID).
type Task struct {
	ID       string    `json:"taskId"`
	Name     string    `json:"task"` // "Compact", "Backup"
	Started  time.Time `json:"-"`
	Finished time.Time `json:"-"`
	Success  bool      `json:"success"`
}

// Took returns how long the task ran.
func (t Task) Took() time.Duration { return t.Finished.Sub(t.Started) }

// start sends POST /$/OP/DATASET(?query) and returns the id of the task it
// started.
func (s *Server) start(ctx context.Context, op, query string) (string, error) {
	u := s.base + "/$/" + op + "/" + url.PathEscape(s.dataset)
	if query != "" {
		u += "?" + query
	}
	body, err := s.do(ctx, op, http.MethodPost, u)
	if err != nil {
		return "", err
	}
	var v struct {
		TaskID string `json:"taskId"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.TaskID == "" {
		return "", &kg.Error{Op: op, Status: http.StatusOK, Body: cut(string(body)), Err: fmt.Errorf("%w: no task id in the answer", kg.ErrProtocol)}
	}
	return v.TaskID, nil
}

// wait asks for task id until it has finished, and returns it; a task
// that finished without success is returned with an error wrapping
// ErrTaskFailed.
func (s *Server) wait(ctx context.Context, op, id string) (Task, error) {
	u := s.base + "/$/tasks/" + url.PathEscape(id)
	for {
		body, err := s.do(ctx, op+" task", http.MethodGet, u)
		if err != nil {
			return Task{ID: id}, err
		}
		var v struct {
			Task
			Started  string `json:"started"`
			Finished string `json:"finished"`
		}
		if err := json.Unmarshal(body, &v); err != nil {
			return Task{ID: id}, &kg.Error{Op: op + " task", Status: http.StatusOK, Body: cut(string(body)), Err: fmt.Errorf("%w: %v", kg.ErrProtocol, err)}
		}
		t := v.Task
		t.Started, _ = parseTaskTime(v.Started)
		if v.Finished != "" {
			t.Finished, _ = parseTaskTime(v.Finished)
			if !t.Success {
				return t, fmt.Errorf("%w: task %s (%s of /%s) reports no success; the server's log says why", ErrTaskFailed, id, t.Name, s.dataset)
			}
			return t, nil
		}
		select {
		case <-ctx.Done():
			return t, fmt.Errorf("waiting for task %s (%s of /%s, which goes on in the server): %w", id, op, s.dataset, ctx.Err())
		case <-time.After(s.cfg.Poll):
		}
	}
}

// parseTaskTime reads the times of Fuseki's task records,
// 2026-11-27T20:57:56.250+00:00.
func parseTaskTime(v string) (time.Time, error) {
	return time.Parse("2006-01-02T15:04:05.999999999-07:00", v)
}

// do sends one request to the admin API and returns the answer's body. A
// 404 means the server does not serve that part of the admin API
// (ErrUnsupported); Fuseki answers 400 "Dataset not found" for an unknown
// dataset, returned as a *kg.Error matching kg.ErrNotFound; other
// failures are *kg.Error values matching their kg sentinels.
func (s *Server) do(ctx context.Context, op, method, u string) (_ []byte, err error) {
	ctx, r := telemetry.StartRequest(ctx, string(kg.Fuseki), op, "", u)
	defer func() { r.End(ctx, err) }()
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, &kg.Error{Op: op, Err: err}
	}
	req.Header.Set("Accept", "application/json")
	if s.cfg.Username != "" || s.cfg.Password != "" {
		req.SetBasicAuth(s.cfg.Username, s.cfg.Password)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, &kg.Error{Op: op, Err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, &kg.Error{Op: op, Status: resp.StatusCode, Err: err}
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("%w: %s answers 404 to %s %s: it serves no admin API (run Fuseki's FusekiServerCmd, as scripts/fuseki start does)",
			ErrUnsupported, s.base, method, strings.TrimPrefix(u, s.base))
	case resp.StatusCode == http.StatusBadRequest && strings.Contains(string(body), "Dataset not found"):
		return nil, &kg.Error{Op: op, Status: http.StatusNotFound, Body: "no dataset /" + s.dataset + " on the server"}
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, &kg.Error{Op: op, Status: resp.StatusCode, Body: cut(string(body)),
			Err: errors.New("the admin API answers requests from the server's own machine only (and, with a password file, its admin user only)")}
	case resp.StatusCode/100 != 2:
		return nil, &kg.Error{Op: op, Status: resp.StatusCode, Body: cut(string(body))}
	}
	return body, nil
}

// cut shortens a server's answer for an error message.
func cut(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
