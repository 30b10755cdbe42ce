package api_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/api"
	"github.com/saver-dev/saver/embedded"
	"github.com/saver-dev/saver/storetest"
	"github.com/saver-dev/saver/ttl"
)

// MustEmbeddedServer returns a server on an embedded store in a new file, both on
// clock, with session threads by default that live an hour and are
// refreshed on read.
func MustEmbeddedServer(tb testing.TB, clock *storetest.Clock) *api.Server {
	tb.Helper()
	store, err := embedded.Open(filepath.Join(tb.TempDir(), "saver.db"), embedded.WithNow(clock.Now), embedded.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		tb.Fatalf("embedded.Open: %v", err)
	}
	tb.Cleanup(func() { store.Close() })
	s := MustServer(tb, store)
	s.Capabilities = embeddedCapabilities(store)
	s.Now = clock.Now
	s.TTL = ttl.Policy{Default: saver.ScopeSession, Session: time.Hour, RefreshOnRead: true}
	return s
}

// expiryTuple is the part of a tuple response the expiry test reads.
type expiryTuple struct {
	Scope     saver.Scope   `json:"scope"`
	ExpiresAt int64         `json:"expires_at"`
	Values    []saver.Blob  `json:"values"`
	Writes    []saver.Write `json:"writes"`
}

// putSessionThread puts checkpoint cp1 with blob a@1 and one write in
// thread, in the server's default scope.
func putSessionThread(t *testing.T, s *api.Server, thread string) {
	t.Helper()
	b, _ := json.Marshal(putBody())
	if rec := do(t, s, "POST", "/v1/threads/"+thread+"/checkpoints", "application/json", b); rec.Code != http.StatusOK {
		t.Fatalf("put checkpoint: Code=%d body %s", rec.Code, rec.Body)
	}
	w := `{"checkpoint_id":"cp1","writes":[{"task_id":"task","idx":0,"channel":"a","value":{"type":"msgpack","data":""}}]}`
	if rec := do(t, s, "POST", "/v1/threads/"+thread+"/writes", "application/json", []byte(w)); rec.Code != http.StatusNoContent {
		t.Fatalf("put writes: Code=%d body %s", rec.Code, rec.Body)
	}
}

// mustRead gets the latest checkpoint of thread and checks that it is cp1,
// whole, expiring at want.
func mustRead(t *testing.T, s *api.Server, thread string, want int64) {
	t.Helper()
	rec := do(t, s, "GET", "/v1/threads/"+thread+"/checkpoint", "", nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("get %s: Code=%d body %s", thread, rec.Code, rec.Body)
	}
	var got expiryTuple
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("get %s: %v", thread, err)
	}
	if got.Scope != saver.ScopeSession || got.ExpiresAt != want || len(got.Values) != 1 || len(got.Writes) != 1 {
		t.Fatalf("get %s = %+v, want session scope, expires_at %d, one value and one write", thread, got, want)
	}
}

// mustBeGone checks that thread reads as not found and lists nothing.
func mustBeGone(t *testing.T, s *api.Server, thread string) {
	t.Helper()
	rec := do(t, s, "GET", "/v1/threads/"+thread+"/checkpoint", "", nil)
	if got, want := rec.Code, http.StatusNotFound; got != want {
		t.Fatalf("get %s: Code=%d, want %d (body %s)", thread, got, want, rec.Body)
	}
	if got, want := errorCode(t, rec), "not_found"; got != want {
		t.Fatalf("get %s: code=%q, want %q", thread, got, want)
	}
	rec = do(t, s, "POST", "/v1/checkpoints/search", "application/json", []byte(`{"thread_id":"`+thread+`"}`))
	var page struct {
		Tuples []expiryTuple `json:"tuples"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &page); rec.Code != http.StatusOK || err != nil || len(page.Tuples) != 0 {
		t.Fatalf("search %s: Code=%d body %s", thread, rec.Code, rec.Body)
	}
}

// TestExpiryEmbedded runs session threads through the API on an embedded store: one
// expires an hour after its put, one is pinned, and one is kept alive by
// being read.
func TestExpiryEmbedded(t *testing.T) {
	clock := storetest.NewClock()
	t0 := clock.Now()
	s := MustEmbeddedServer(t, clock)
	for _, thread := range []string{"expires", "pinned", "refreshed"} {
		putSessionThread(t, s, thread)
	}

	// Reads in the first half of the lifetime refresh nothing.
	clock.Advance(10 * time.Minute)
	mustRead(t, s, "expires", t0.Add(time.Hour).Unix())
	rec := do(t, s, "POST", "/v1/threads/pinned/checkpoints/pin", "application/json", []byte(`{"checkpoint_id":"cp1"}`))
	if rec.Code != http.StatusNoContent {
		t.Fatalf("pin: Code=%d body %s", rec.Code, rec.Body)
	}

	// A read in the second half of the lifetime extends the checkpoint,
	// its blob and its writes by the session lifetime.
	advanceTo := func(d time.Duration) { clock.Advance(t0.Add(d).Sub(clock.Now())) }
	advanceTo(40 * time.Minute)
	mustRead(t, s, "refreshed", t0.Add(100*time.Minute).Unix())

	// Unread since, the first thread expires as put.
	advanceTo(time.Hour)
	mustBeGone(t, s, "expires")
	mustRead(t, s, "refreshed", t0.Add(100*time.Minute).Unix())
	advanceTo(80 * time.Minute)
	mustRead(t, s, "refreshed", t0.Add(140*time.Minute).Unix())
	advanceTo(140 * time.Minute)
	mustBeGone(t, s, "refreshed")

	clock.Advance(365 * 24 * time.Hour)
	mustRead(t, s, "pinned", 0)
}
