package main

import (
	"bytes"
	"cmp"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/api"
	"github.com/saver-dev/saver/dynamo"
	"github.com/saver-dev/saver/embedded"
)

// countingStore wraps a store as a metrics or tracing decorator would: it
// counts the calls it passes on and has no method beyond saver.Store's, so
// a server that looked for capabilities in its store would find none.
type countingStore struct {
	saver.Store
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingStore) count(op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	c.calls[op]++
}

func (c *countingStore) PutCheckpoint(ctx context.Context, in saver.PutCheckpoint) error {
	c.count("PutCheckpoint")
	return c.Store.PutCheckpoint(ctx, in)
}

func (c *countingStore) GetTuple(ctx context.Context, ref saver.CheckpointRef) (*saver.Tuple, error) {
	c.count("GetTuple")
	return c.Store.GetTuple(ctx, ref)
}

// failingPinger is a backend that does not answer.
type failingPinger struct{}

func (failingPinger) Ping(context.Context) error {
	return saver.Errorf(saver.EUNAVAILABLE, "The backend is away.")
}

// sortedRoutes returns the server's routes in a stable order.
func sortedRoutes(s *api.Server) []api.Route {
	rs := s.Routes()
	slices.SortFunc(rs, func(a, b api.Route) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), strings.Compare(a.Method, b.Method))
	})
	return rs
}

// mustMainWithEmbedded returns a Main of the default configuration, logging
// nowhere, and an embedded store in the test's directory.
func mustMainWithEmbedded(t *testing.T) (*Main, *embedded.Store) {
	t.Helper()
	st, err := embedded.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m := NewMain(io.Discard)
	m.initLogger()
	return m, st
}

// TestWiringSurvivesAWrapper serves the embedded store behind a counting
// wrapper, wired with the capabilities the binary gives the bare store: the
// server has the same routes, and conditional puts, reads, the tree, pin,
// the ledger and readiness behave as wired, while the store's own calls go
// through the wrapper.
func TestWiringSurvivesAWrapper(t *testing.T) {
	m, st := mustMainWithEmbedded(t)
	bare := m.newServer(st, embeddedCapabilities(st))
	wrapped := &countingStore{Store: st}
	srv := m.newServer(wrapped, embeddedCapabilities(st))
	if diff := gocmp.Diff(sortedRoutes(bare), sortedRoutes(srv)); diff != "" {
		t.Fatalf("routes of the wrapped store mismatch (-bare +wrapped):\n%s", diff)
	}

	put := func(id, head string) string {
		return `{"checkpoint_ns":"","checkpoint_id":"` + id + `","parent_checkpoint_id":"","checkpoint":{"type":"msgpack","data":"AQ=="},` +
			`"metadata":{"source":"loop","step":0},"channel_versions":{},"blobs":[],"expected_head":"` + head + `"}`
	}
	for _, r := range []struct {
		name, method, path, body string
		want                     int
	}{
		{"ConditionalPut", "POST", "/v1/threads/t/checkpoints", put("c1", ""), 200},
		{"HeadMoved", "POST", "/v1/threads/t/checkpoints", put("c2", ""), 409},
		{"Get", "GET", "/v1/threads/t/checkpoint", "", 200},
		{"Tree", "GET", "/v1/threads/t/tree", "", 200},
		{"Pin", "POST", "/v1/threads/t/checkpoints/pin", `{"checkpoint_id":"c1"}`, 204},
		{"Claim", "POST", "/v1/idempotency/claim", `{"key":"k"}`, 200},
		{"Ready", "GET", "/readyz", "", 200},
	} {
		req := httptest.NewRequest(r.method, r.path, bytes.NewReader([]byte(r.body)))
		if r.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		if rec.Code != r.want {
			t.Fatalf("%s: %s %s = %d %s, want %d", r.name, r.method, r.path, rec.Code, rec.Body, r.want)
		}
	}
	if diff := gocmp.Diff(map[string]int{"PutCheckpoint": 2, "GetTuple": 1}, wrapped.calls); diff != "" {
		t.Fatalf("calls through the wrapper mismatch (-want +got):\n%s", diff)
	}

	// Readiness is the wired Pinger's, not the store's.
	caps := embeddedCapabilities(st)
	caps.Pinger = failingPinger{}
	away := m.newServer(wrapped, caps)
	rec := httptest.NewRecorder()
	away.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz with a failing pinger = %d %s, want 503", rec.Code, rec.Body)
	}
}

// TestAWSStoreCapabilities checks what the production store is wired with:
// its dynamo store's tree, ledger, expiry and items, its own readiness
// probe (table and bucket) and conditional puts, so that it serves every
// route the embedded store serves without embedding the dynamo store, but
// the backup: DynamoDB and S3 have backups of their own (README, "Backup and
// restore").
func TestAWSStoreCapabilities(t *testing.T) {
	st := &awsStore{DB: dynamo.NewStore(nil, "table")}
	caps := st.capabilities()
	if caps.Tree != st.DB || caps.Ledger != st.DB || caps.Expirer != st.DB || caps.Items != st.DB || caps.Pinger != st || !caps.HeadGuard {
		t.Fatalf("capabilities = %+v, want the dynamo store's, the awsStore's Ping and HeadGuard", caps)
	}
	m, b := mustMainWithEmbedded(t)
	want := slices.DeleteFunc(sortedRoutes(m.newServer(b, embeddedCapabilities(b))), func(r api.Route) bool {
		return r.Path == "/admin/backup"
	})
	if caps.Backup != nil {
		t.Fatalf("the production store is wired with a backup: %T", caps.Backup)
	}
	if diff := gocmp.Diff(want, sortedRoutes(m.newServer(&countingStore{Store: st.DB}, caps))); diff != "" {
		t.Fatalf("routes of the production store mismatch (-embedded +production):\n%s", diff)
	}
}

// TestWiringClientLimits: the server gets what each per-client limit comes
// to, Auto ones following the limits of all clients.
func TestWiringClientLimits(t *testing.T) {
	m := NewMain(io.Discard)
	m.initLogger()
	m.Config.MaxConns, m.Config.MaxBodiesBytes = 64, 256<<20
	s := m.newServer(nil, api.Capabilities{})
	if s.MaxConnsPerClient != 8 || s.MaxClientRequests != 16 || s.MaxClientBodiesBytes != 64<<20 {
		t.Fatalf("conns per client %d, client requests %d, client bodies %d; want 8, 16, %d",
			s.MaxConnsPerClient, s.MaxClientRequests, s.MaxClientBodiesBytes, 64<<20)
	}
}
