package api_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/api"
	"github.com/saver-dev/saver/api/apitest"
	"github.com/saver-dev/saver/storetest"
	"github.com/saver-dev/saver/tree"
)

// forked is a thread whose step 2 was replayed from checkpoint 1: "2" is the
// abandoned attempt, "3"→"4" the live path.
func forked() []saver.Node {
	return []saver.Node{
		{ThreadID: "t", ID: "1", Source: "input", Step: -1},
		{ThreadID: "t", ID: "2", ParentID: "1", Source: "loop", Step: 0, HasError: true},
		{ThreadID: "t", ID: "3", ParentID: "1", Source: "fork", Step: 0},
		{ThreadID: "t", ID: "4", ParentID: "3", Source: "loop", Step: 1},
	}
}

func TestTree(t *testing.T) {
	s := MustMockServer(t, &apitest.Store{ListNodesFn: func(_ context.Context, _, tid string) ([]saver.Node, error) {
		if tid != "t" {
			return nil, nil
		}
		return forked(), nil
	}})
	ids := func(path string) []string {
		rec := do(t, s, "GET", path, "", nil)
		if rec.Code != 200 {
			t.Fatalf("%s: Code=%d body %s", path, rec.Code, rec.Body)
		}
		var body struct {
			Nodes []struct {
				ID string `json:"id"`
			} `json:"nodes"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, n := range body.Nodes {
			out = append(out, n.ID)
		}
		return out
	}
	tests := []struct {
		path string
		want []string
	}{
		{"/v1/threads/t/tree", []string{"1", "2", "3", "4"}},
		{"/v1/threads/t/tree/path", []string{"1", "3", "4"}},
		{"/v1/threads/t/tree/path?checkpoint_id=2", []string{"1", "2"}},
		{"/v1/threads/t/tree/children?checkpoint_id=1", []string{"2", "3"}},
		{"/v1/threads/t/tree/leaves", []string{"2", "4"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, ids(tt.path)); diff != "" {
			t.Fatalf("%s (-want +got):\n%s", tt.path, diff)
		}
	}

	rec := do(t, s, "GET", "/v1/threads/t/tree/abandoned", "", nil)
	var ab struct {
		Branches []struct {
			ForkPoint string   `json:"fork_point"`
			IDs       []string `json:"checkpoint_ids"`
		} `json:"branches"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &ab); err != nil || len(ab.Branches) != 1 ||
		ab.Branches[0].ForkPoint != "1" || !cmp.Equal(ab.Branches[0].IDs, []string{"2"}) {
		t.Fatalf("abandoned: %s (err %v)", rec.Body, err)
	}

	rec = do(t, s, "GET", "/v1/threads/t/tree/context?limit=5", "", nil)
	if rec.Code != 200 || !json.Valid(rec.Body.Bytes()) {
		t.Fatalf("context: Code=%d body %s", rec.Code, rec.Body)
	}

	for _, tt := range []struct {
		path   string
		status int
		code   string
	}{
		{"/v1/threads/nobody/tree", 404, "not_found"},
		{"/v1/threads/t/tree/path?checkpoint_id=9", 404, "not_found"},
		{"/v1/threads/t/tree/path?checkpoint_ns=x", 400, "invalid"},
		{"/v1/threads/t/tree/leaves?limit=1", 400, "invalid"},
		{"/v1/threads/t/tree/context?limit=-1", 400, "invalid"},
		{"/v1/threads/t/tree/path?layout=cols", 400, "invalid"},
		{"/v1/threads/nobody/tree?layout=cols", 400, "invalid"},
		{"/v1/threads/t/tree/abandoned?layout=columns", 400, "invalid"},
		{"/v1/threads/t/tree/context?layout=columns", 400, "invalid"},
	} {
		rec := do(t, s, "GET", tt.path, "", nil)
		if rec.Code != tt.status || errorCode(t, rec) != tt.code {
			t.Fatalf("%s: Code=%d body %s, want %d %s", tt.path, rec.Code, rec.Body, tt.status, tt.code)
		}
	}
}

// TestTreeColumns: every answer of tree entries, asked for with
// layout=columns, holds the entries of its rows answer, in order, in JSON and
// in msgpack; the whole tree keeps its thread id and head.
func TestTreeColumns(t *testing.T) {
	s := MustMockServer(t, &apitest.Store{ListNodesFn: func(_ context.Context, _, tid string) ([]saver.Node, error) {
		return forked(), nil
	}})
	type answer struct {
		ThreadID string           `json:"thread_id" msgpack:"thread_id"`
		Head     *tree.Entry      `json:"head" msgpack:"head"`
		Nodes    []tree.Entry     `json:"nodes" msgpack:"nodes"`
		Columns  *api.WireColumns `json:"columns" msgpack:"columns"`
	}
	get := func(path, accept string) answer {
		t.Helper()
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Accept", accept)
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Fatalf("%s: Code=%d body %s", path, rec.Code, rec.Body)
		}
		var a answer
		var err error
		if accept == "application/json" {
			err = json.Unmarshal(rec.Body.Bytes(), &a)
		} else {
			err = msgpack.Unmarshal(rec.Body.Bytes(), &a)
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return a
	}
	for _, path := range []string{
		"/v1/threads/t/tree", "/v1/threads/t/tree/path", "/v1/threads/t/tree/path?checkpoint_id=2",
		"/v1/threads/t/tree/children?checkpoint_id=1", "/v1/threads/t/tree/children", "/v1/threads/t/tree/leaves",
	} {
		for _, accept := range []string{"application/json", "application/msgpack"} {
			rows := get(path, accept)
			sep := "?"
			if strings.Contains(path, "?") {
				sep = "&"
			}
			cols := get(path+sep+"layout=columns", accept)
			if cols.Nodes != nil || cols.Columns == nil {
				t.Fatalf("%s %s: columns answer has nodes %v, columns %v", path, accept, cols.Nodes, cols.Columns)
			}
			got := cols.Columns.Rows(t)
			if diff := cmp.Diff(rows.Nodes, got, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("%s %s: columns (-rows +columns):\n%s", path, accept, diff)
			}
			if rows.ThreadID != cols.ThreadID || !cmp.Equal(rows.Head, cols.Head) {
				t.Fatalf("%s %s: thread %q head %v as rows, %q %v as columns", path, accept,
					rows.ThreadID, rows.Head, cols.ThreadID, cols.Head)
			}
			if same := get(path+sep+"layout=rows", accept); !cmp.Equal(rows, same) {
				t.Fatalf("%s %s: layout=rows differs from the default", path, accept)
			}
		}
	}
}

// TestTreeContextValues serves the resume context with values and the live
// messages: the abandoned attempt "2" is one line, and its writes are not
// read, while the live steps' writes are.
func TestTreeContextValues(t *testing.T) {
	var read []string
	s := MustMockServer(t, &apitest.Store{
		ListNodesFn: func(context.Context, string, string) ([]saver.Node, error) { return forked(), nil },
		GetTupleFn: func(_ context.Context, ref saver.CheckpointRef) (*saver.Tuple, error) {
			read = append(read, ref.ID)
			tup := &saver.Tuple{Checkpoint: saver.Checkpoint{CheckpointRef: ref}}
			switch ref.ID {
			case "2":
				tup.Writes = []saver.Write{{TaskID: "x", TaskPath: "~__pregel_pull, agent", Idx: -1, Channel: saver.ChannelError,
					Value: saver.Typed{Type: "msgpack", Data: []byte("\xa4boom")}}}
			case "3":
				tup.Writes = []saver.Write{{TaskID: "y", TaskPath: "~__pregel_pull, agent", Channel: "messages",
					Value: storetest.MessageValue(t, "ai", "a1", "hello")}}
			}
			return tup, nil
		},
	})
	rec := do(t, s, "GET", "/v1/threads/t/tree/context?values=true&value_bytes=50", "", nil)
	var body struct {
		Text    string          `json:"text"`
		Context json.RawMessage `json:"context"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); rec.Code != 200 || err != nil {
		t.Fatalf("Code=%d body %s", rec.Code, rec.Body)
	}
	want := "step -1 · input\n" +
		"  abandoned: 1 checkpoint, error: boom\n" +
		"step 0 · fork: agent wrote messages: ai: hello\n" +
		"step 1\n"
	if diff := cmp.Diff(want, body.Text); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
	if !json.Valid(body.Context) || len(body.Context) < 10 {
		t.Errorf("context %s", body.Context)
	}
	// Checkpoint 1's writes led to the abandoned 2, so they are not read.
	if diff := cmp.Diff([]string{"2", "3", "4"}, read); diff != "" {
		t.Errorf("tuples read (-want +got):\n%s", diff)
	}

	rec = do(t, s, "GET", "/v1/threads/t/tree/messages", "", nil)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"messages":[{"type":"ai","data":{`) {
		t.Errorf("messages: Code=%d body %s", rec.Code, rec.Body)
	}

	for _, path := range []string{
		"/v1/threads/t/tree/context?values=maybe",
		"/v1/threads/t/tree/context?value_bytes=10",
		"/v1/threads/t/tree/context?values=true&value_bytes=-1",
		"/v1/threads/t/tree/context?values=true&value_bytes=100000000",
		"/v1/threads/t/tree/context?values=true&checkpoint_ns=nowhere",
		"/v1/threads/t/tree/messages?limit=1",
	} {
		rec := do(t, s, "GET", path, "", nil)
		if rec.Code/100 != 4 {
			t.Errorf("%s: Code=%d body %s, want 4xx", path, rec.Code, rec.Body)
		}
	}
}

// storeOnly hides the mock's tree and ledger methods, like a store without them.
type storeOnly struct{ saver.Store }

func TestTreeAndLedgerRoutesOnlyWhenSupported(t *testing.T) {
	s := MustServer(t, storeOnly{&apitest.Store{}})
	for _, p := range []struct{ method, path string }{
		{"GET", "/v1/threads/t/tree"},
		{"POST", "/v1/idempotency/claim"},
	} {
		rec := do(t, s, p.method, p.path, "application/json", []byte(`{}`))
		if rec.Code != 404 && rec.Code != 405 || errorCode(t, rec) != "no_route" {
			t.Fatalf("%s %s: Code=%d body %s, want no_route", p.method, p.path, rec.Code, rec.Body)
		}
	}
}

// TestCapabilitiesOnlyAsWired serves a store that implements the tree,
// ledger and expiry interfaces without wiring them: the server does not
// look for them, so their routes are absent and a conditional put is
// refused, until they are wired.
func TestCapabilitiesOnlyAsWired(t *testing.T) {
	st := &apitest.Store{
		ListNodesFn: func(context.Context, string, string) ([]saver.Node, error) {
			return []saver.Node{{ThreadID: "t", ID: "c1"}}, nil
		},
		ClaimFn: func(_ context.Context, in saver.ClaimRequest) (*saver.Claim, error) {
			return &saver.Claim{Key: in.Key, State: saver.ClaimClaimed, Token: "tok", Attempt: 1}, nil
		},
		SetExpiryFn:     func(context.Context, saver.CheckpointRef, int64) error { return nil },
		PutCheckpointFn: func(context.Context, saver.PutCheckpoint) error { return nil },
	}
	var _ interface {
		saver.TreeStore
		saver.Ledger
		saver.Expirer
	} = st
	put := putBody()
	put["expected_head"] = ""
	conditional, _ := json.Marshal(put)
	requests := []struct {
		method, path, body string
		wired              int
	}{
		{"GET", "/v1/threads/t/tree", "", 200},
		{"POST", "/v1/idempotency/claim", `{"key":"k"}`, 200},
		{"POST", "/v1/threads/t/checkpoints/pin", `{"checkpoint_id":"c1"}`, 204},
		{"GET", "/ui", "", 200},
	}
	bare := MustServer(t, st)
	for _, r := range requests {
		rec := do(t, bare, r.method, r.path, "application/json", []byte(r.body))
		if rec.Code != 404 && rec.Code != 405 || errorCode(t, rec) != "no_route" {
			t.Fatalf("unwired %s %s: Code=%d body %s, want no_route", r.method, r.path, rec.Code, rec.Body)
		}
	}
	if rec := do(t, bare, "POST", "/v1/threads/t/checkpoints", "application/json", conditional); rec.Code != 400 || errorCode(t, rec) != "invalid" {
		t.Fatalf("unwired conditional put: Code=%d body %s, want 400 invalid", rec.Code, rec.Body)
	}

	wired := MustServer(t, st)
	wired.Capabilities = api.Capabilities{Tree: st, Ledger: st, Expirer: st, HeadGuard: true}
	for _, r := range requests {
		if rec := do(t, wired, r.method, r.path, "application/json", []byte(r.body)); rec.Code != r.wired {
			t.Fatalf("wired %s %s: Code=%d body %s, want %d", r.method, r.path, rec.Code, rec.Body, r.wired)
		}
	}
	if rec := do(t, wired, "POST", "/v1/threads/t/checkpoints", "application/json", conditional); rec.Code != 200 {
		t.Fatalf("wired conditional put: Code=%d body %s, want 200", rec.Code, rec.Body)
	}
}
