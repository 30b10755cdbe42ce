package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/api"
	"github.com/saver-dev/saver/api/apitest"
	"github.com/saver-dev/saver/embedded"
)

// MustServer returns a server on store that logs nowhere, with no
// capabilities wired.
func MustServer(tb testing.TB, store saver.Store) *api.Server {
	tb.Helper()
	s := api.NewServer(store, slog.New(slog.NewTextHandler(io.Discard, nil)))
	s.PageSize = 2
	return s
}

// MustMockServer returns a server on m with the capabilities a mock has
// wired: its tree, ledger and expiry methods call the test's functions.
// Conditional puts are not wired (see TestExpectedHead).
func MustMockServer(tb testing.TB, m *apitest.Store) *api.Server {
	tb.Helper()
	s := MustServer(tb, m)
	s.Capabilities = api.Capabilities{Tree: m, Ledger: m, Expirer: m, Items: m, Backup: m}
	return s
}

// embeddedCapabilities wires the embedded store as cmd/saver does.
func embeddedCapabilities(st *embedded.Store) api.Capabilities {
	return api.Capabilities{Tree: st, Trees: st, Ledger: st, Expirer: st, Items: st, Pinger: st, Backup: st, HeadGuard: true}
}

// do sends one request through the whole echo stack.
func do(tb testing.TB, s *api.Server, method, path, contentType string, body []byte) *httptest.ResponseRecorder {
	tb.Helper()
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return rec
}

func errorCode(tb testing.TB, rec *httptest.ResponseRecorder) string {
	tb.Helper()
	var body struct {
		Error struct {
			Code    string `json:"code" msgpack:"code"`
			Message string `json:"message" msgpack:"message"`
		} `json:"error" msgpack:"error"`
	}
	var err error
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/msgpack") {
		err = msgpack.Unmarshal(rec.Body.Bytes(), &body)
	} else {
		err = json.Unmarshal(rec.Body.Bytes(), &body)
	}
	if err != nil {
		tb.Fatalf("error body %q: %v", rec.Body.String(), err)
	}
	if body.Error.Message == "" {
		tb.Fatalf("error body %q has no message", rec.Body.String())
	}
	return body.Error.Code
}

func TestErrorMapping(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"NotFound", saver.Errorf(saver.ENOTFOUND, "No checkpoint."), 404, "not_found"},
		{"Invalid", saver.Errorf(saver.EINVALID, "Bad."), 400, "invalid"},
		{"Conflict", saver.Errorf(saver.ECONFLICT, "Moved."), 409, "conflict"},
		{"Gone", saver.Errorf(saver.EGONE, "Deleted."), 410, "gone"},
		{"TooLarge", saver.Errorf(saver.ETOOLARGE, "Big."), 413, "too_large"},
		{"Unavailable", saver.Errorf(saver.EUNAVAILABLE, "Throttled."), 503, "unavailable"},
		{"Wrapped", errors.Join(errors.New("ctx"), saver.Errorf(saver.ENOTFOUND, "x")), 404, "not_found"},
		{"Internal", errors.New("disk on fire"), 500, "internal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := MustMockServer(t, &apitest.Store{GetTupleFn: func(context.Context, saver.CheckpointRef) (*saver.Tuple, error) {
				return nil, tt.err
			}})
			rec := do(t, s, "GET", "/v1/threads/t1/checkpoint", "", nil)
			if got, want := rec.Code, tt.status; got != want {
				t.Fatalf("Code=%d, want %d (body %s)", got, want, rec.Body)
			}
			if got, want := errorCode(t, rec), tt.code; got != want {
				t.Fatalf("code=%q, want %q", got, want)
			}
			if tt.status == 503 && rec.Header().Get("Retry-After") == "" {
				t.Fatal("503 without Retry-After")
			}
			if tt.status == 500 && strings.Contains(rec.Body.String(), "disk on fire") {
				t.Fatal("internal error details leaked to the caller")
			}
		})
	}
}

func TestRoutes_Unknown(t *testing.T) {
	s := MustMockServer(t, &apitest.Store{})
	for _, tt := range []struct{ method, path string }{
		{"GET", "/v1/nope"},
		{"PATCH", "/v1/threads/t1/checkpoints"},
	} {
		rec := do(t, s, tt.method, tt.path, "", nil)
		if rec.Code != 404 && rec.Code != 405 {
			t.Fatalf("%s %s: Code=%d, want 404 or 405", tt.method, tt.path, rec.Code)
		}
		if got, want := errorCode(t, rec), "no_route"; got != want {
			t.Fatalf("%s %s: code=%q, want %q", tt.method, tt.path, got, want)
		}
	}
}

// putBody is a valid put request as the Python client would send it.
func putBody() map[string]any {
	return map[string]any{
		"checkpoint_ns":        "",
		"checkpoint_id":        "cp1",
		"parent_checkpoint_id": "",
		"checkpoint":           map[string]any{"type": "msgpack", "data": []byte{1, 2, 3}},
		"metadata":             map[string]any{"source": "loop", "step": 1, "score": 0.5, "parents": map[string]any{}},
		"channel_versions":     map[string]any{"a": "1"},
		"blobs":                []any{map[string]any{"channel": "a", "version": "1", "value": map[string]any{"type": "msgpack", "data": []byte{9}}}},
	}
}

func TestCheckpointPut_Msgpack(t *testing.T) {
	var got saver.PutCheckpoint
	s := MustMockServer(t, &apitest.Store{PutCheckpointFn: func(_ context.Context, in saver.PutCheckpoint) error {
		got = in
		return nil
	}})
	body, _ := msgpack.Marshal(putBody())
	rec := do(t, s, "POST", "/v1/threads/a%2Fb%20c%25%C3%A9/checkpoints", "application/msgpack", body)
	if rec.Code != 200 {
		t.Fatalf("Code=%d, body %s", rec.Code, rec.Body)
	}
	want := saver.PutCheckpoint{
		Checkpoint: saver.Checkpoint{
			CheckpointRef:   saver.CheckpointRef{Tenant: api.DefaultTenant, ThreadID: "a/b c%é", NS: "", ID: "cp1"},
			Body:            saver.Typed{Type: "msgpack", Data: []byte{1, 2, 3}},
			Metadata:        saver.Metadata{"source": "loop", "step": int64(1), "score": 0.5, "parents": map[string]any{}},
			ChannelVersions: map[string]string{"a": "1"},
			Scope:           saver.ScopePersistent, // the default policy's scope, which never expires
		},
		Blobs: []saver.Blob{{Channel: "a", Version: "1", Value: saver.Typed{Type: "msgpack", Data: []byte{9}}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("stored put differs (-want +got):\n%s", diff)
	}
	var cfg map[string]string
	if err := msgpack.Unmarshal(rec.Body.Bytes(), &cfg); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"thread_id": "a/b c%é", "checkpoint_ns": "", "checkpoint_id": "cp1"}, cfg); diff != "" {
		t.Fatalf("config differs:\n%s", diff)
	}
}

func TestCheckpointPut_JSONKeepsNumberTypes(t *testing.T) {
	var got saver.PutCheckpoint
	s := MustMockServer(t, &apitest.Store{PutCheckpointFn: func(_ context.Context, in saver.PutCheckpoint) error {
		got = in
		return nil
	}})
	body, _ := json.Marshal(putBody())
	rec := do(t, s, "POST", "/v1/threads/t1/checkpoints", "application/json", body)
	if rec.Code != 200 {
		t.Fatalf("Code=%d, body %s", rec.Code, rec.Body)
	}
	if _, ok := got.Metadata["step"].(int64); !ok {
		t.Fatalf("step is %T, want int64", got.Metadata["step"])
	}
	if _, ok := got.Metadata["score"].(float64); !ok {
		t.Fatalf("score is %T, want float64", got.Metadata["score"])
	}
	if !bytes.Equal(got.Body.Data, []byte{1, 2, 3}) {
		t.Fatalf("body data %v: base64 not decoded", got.Body.Data)
	}
}

// TestBadInput sends broken requests: each must be a 4xx with a message, and
// the store must never be called.
func TestBadInput(t *testing.T) {
	withField := func(k string, v any) []byte {
		b := putBody()
		b[k] = v
		out, _ := json.Marshal(b)
		return out
	}
	without := func(k string) []byte {
		b := putBody()
		delete(b, k)
		out, _ := json.Marshal(b)
		return out
	}
	mp := func(v any) []byte { b, _ := msgpack.Marshal(v); return b }
	tests := []struct {
		name, method, path, ctype string
		body                      []byte
		status                    int
		code                      string
	}{
		{"MalformedJSON", "POST", "/v1/threads/t/checkpoints", "application/json", []byte(`{"checkpoint_id":`), 400, "invalid"},
		{"MalformedMsgpack", "POST", "/v1/threads/t/checkpoints", "application/msgpack", []byte{0xc1, 0x00}, 400, "invalid"},
		{"TrailingJSON", "POST", "/v1/threads/t/checkpoints", "application/json", append(withField("checkpoint_id", "x"), []byte(`{}`)...), 400, "invalid"},
		{"TrailingMsgpack", "POST", "/v1/threads/t/checkpoints", "application/msgpack", append(mp(putBody()), 0x01), 400, "invalid"},
		{"EmptyBody", "POST", "/v1/threads/t/checkpoints", "application/json", nil, 400, "invalid"},
		{"UnknownField", "POST", "/v1/threads/t/checkpoints", "application/json", withField("surprise", 1), 400, "invalid"},
		{"UnknownFieldMsgpack", "POST", "/v1/threads/t/checkpoints", "application/msgpack", mp(map[string]any{"checkpoint_id": "x", "nope": 1}), 400, "invalid"},
		{"WrongType", "POST", "/v1/threads/t/checkpoints", "application/json", withField("checkpoint_id", 12), 400, "invalid"},
		{"MissingCheckpointID", "POST", "/v1/threads/t/checkpoints", "application/json", without("checkpoint_id"), 400, "invalid"},
		{"MissingCheckpointType", "POST", "/v1/threads/t/checkpoints", "application/json", without("checkpoint"), 400, "invalid"},
		{"LongThreadID", "POST", "/v1/threads/" + strings.Repeat("x", 300) + "/checkpoints", "application/json", withField("checkpoint_id", "x"), 400, "invalid"},
		{"UnsupportedType", "POST", "/v1/threads/t/checkpoints", "text/plain", []byte("hi"), 415, "unsupported_media_type"},
		{"NaNMetadata", "POST", "/v1/threads/t/checkpoints", "application/msgpack", func() []byte {
			b := putBody()
			b["metadata"] = map[string]any{"x": nanValue()}
			return mp(b)
		}(), 400, "invalid"},
		{"UnknownQuery", "GET", "/v1/threads/t/checkpoint?checkpoint=x", "", nil, 400, "invalid"},
		{"NegativeLimit", "POST", "/v1/checkpoints/search", "application/json", []byte(`{"limit":-1}`), 400, "invalid"},
		{"HugeLimit", "POST", "/v1/checkpoints/search", "application/json", []byte(`{"limit":1e99}`), 400, "invalid"},
		{"BadCursor", "POST", "/v1/checkpoints/search", "application/json", []byte(`{"cursor":"!!"}`), 400, "invalid"},
		{"WritesWithoutCheckpoint", "POST", "/v1/threads/t/writes", "application/json", []byte(`{"checkpoint_ns":"","writes":[]}`), 400, "invalid"},
		{"WriteWithoutTask", "POST", "/v1/threads/t/writes", "application/json", []byte(`{"checkpoint_id":"c","writes":[{"channel":"a","idx":0,"value":{"type":"null","data":""}}]}`), 400, "invalid"},
		{"DuplicateWrite", "POST", "/v1/threads/t/writes", "application/json", []byte(`{"checkpoint_id":"c","writes":[{"task_id":"t","channel":"a","idx":0,"value":{"type":"null","data":""}},{"task_id":"t","channel":"b","idx":0,"value":{"type":"null","data":""}}]}`), 400, "invalid"},
		{"SpecialChannelWrongIdx", "POST", "/v1/threads/t/writes", "application/json", []byte(`{"checkpoint_id":"c","writes":[{"task_id":"t","channel":"__error__","idx":0,"value":{"type":"null","data":""}}]}`), 400, "invalid"},
		{"NegativeIdxOrdinaryChannel", "POST", "/v1/threads/t/writes", "application/json", []byte(`{"checkpoint_id":"c","writes":[{"task_id":"t","channel":"messages","idx":-1,"value":{"type":"null","data":""}}]}`), 400, "invalid"},
		{"PruneBadStrategy", "POST", "/v1/threads/prune", "application/json", []byte(`{"thread_ids":["a"],"strategy":"some"}`), 400, "invalid"},
		{"PruneEmptyID", "POST", "/v1/threads/prune", "application/json", []byte(`{"thread_ids":[""]}`), 400, "invalid"},
		{"CopyToSelf", "POST", "/v1/threads/t/copy", "application/json", []byte(`{"target_thread_id":"t"}`), 400, "invalid"},
		{"CopyNoTarget", "POST", "/v1/threads/t/copy", "application/json", []byte(`{}`), 400, "invalid"},
		{"RunsEmptyID", "POST", "/v1/runs/delete", "application/json", []byte(`{"run_ids":[""]}`), 400, "invalid"},
		{"TooLarge", "POST", "/v1/threads/t/checkpoints", "application/json", bytes.Repeat([]byte(" "), 2<<20), 413, "too_large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := MustMockServer(t, &apitest.Store{}) // any store call panics: bad input must not reach it
			s.MaxBodyBytes = 1 << 20
			rec := do(t, s, tt.method, tt.path, tt.ctype, tt.body)
			if got, want := rec.Code, tt.status; got != want {
				t.Fatalf("Code=%d, want %d (body %s)", got, want, rec.Body)
			}
			if got, want := errorCode(t, rec), tt.code; got != want {
				t.Fatalf("code=%q, want %q", got, want)
			}
		})
	}
}

func nanValue() float64 { var z float64; return z / z }

func TestSearch_Paging(t *testing.T) {
	all := []*saver.Tuple{}
	for _, id := range []string{"5", "4", "3", "2", "1"} {
		all = append(all, &saver.Tuple{Checkpoint: saver.Checkpoint{CheckpointRef: saver.CheckpointRef{ThreadID: "t", ID: id}, Body: saver.Typed{Type: "msgpack"}}})
	}
	s := MustMockServer(t, &apitest.Store{ListCheckpointsFn: func(_ context.Context, f saver.ListFilter) ([]*saver.Tuple, error) {
		var out []*saver.Tuple
		for _, tp := range all {
			if f.Matches(&tp.Checkpoint) && (f.Limit == 0 || len(out) < f.Limit) {
				out = append(out, tp)
			}
		}
		return out, nil
	}})
	type page struct {
		Tuples []struct {
			CheckpointID string `msgpack:"checkpoint_id"`
		} `msgpack:"tuples"`
		NextCursor *string `msgpack:"next_cursor"`
	}
	walk := func(limit *int) []string {
		var ids []string
		var cursor *string
		for i := 0; i < 10; i++ {
			req := map[string]any{"thread_id": "t", "cursor": cursor}
			if limit != nil {
				req["limit"] = *limit - len(ids)
			}
			b, _ := msgpack.Marshal(req)
			rec := do(t, s, "POST", "/v1/checkpoints/search", "application/msgpack", b)
			if rec.Code != 200 {
				t.Fatalf("Code=%d body %s", rec.Code, rec.Body)
			}
			var p page
			if err := msgpack.Unmarshal(rec.Body.Bytes(), &p); err != nil {
				t.Fatal(err)
			}
			for _, tp := range p.Tuples {
				ids = append(ids, tp.CheckpointID)
			}
			if p.NextCursor == nil {
				return ids
			}
			cursor = p.NextCursor
		}
		t.Fatal("paging did not end")
		return nil
	}
	three := 3
	if diff := cmp.Diff([]string{"5", "4", "3", "2", "1"}, walk(nil)); diff != "" {
		t.Fatalf("unlimited walk:\n%s", diff)
	}
	if diff := cmp.Diff([]string{"5", "4", "3"}, walk(&three)); diff != "" {
		t.Fatalf("limit 3 walk:\n%s", diff)
	}
}

func TestHealth(t *testing.T) {
	s := MustMockServer(t, &apitest.Store{})
	for _, p := range []string{"/healthz", "/readyz"} {
		if rec := do(t, s, "GET", p, "", nil); rec.Code != http.StatusOK {
			t.Fatalf("%s: Code=%d", p, rec.Code)
		}
	}
}

func TestPanicRecovered(t *testing.T) {
	s := MustMockServer(t, &apitest.Store{GetTupleFn: func(context.Context, saver.CheckpointRef) (*saver.Tuple, error) {
		panic("store bug")
	}})
	rec := do(t, s, "GET", "/v1/threads/t/checkpoint", "", nil)
	if got, want := rec.Code, http.StatusInternalServerError; got != want {
		t.Fatalf("Code=%d, want %d", got, want)
	}
	if got, want := errorCode(t, rec), "internal"; got != want {
		t.Fatalf("code=%q, want %q", got, want)
	}
	if rec.Header().Get("X-Request-ID") == "" {
		t.Fatal("no request id on a recovered panic")
	}
	// The server keeps serving after a panic.
	if rec := do(t, s, "GET", "/healthz", "", nil); rec.Code != http.StatusOK {
		t.Fatalf("healthz after panic: Code=%d", rec.Code)
	}
}
