package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/saver-dev/saver/api"
	"github.com/saver-dev/saver/embedded"
)

// TestTenantIsolation stores tenant A's data, lets tenant B call every
// endpoint with A's thread ids, checkpoint ids, run ids and idempotency key,
// and checks that B never sees A's data and that A's data is unchanged.
func TestTenantIsolation(t *testing.T) {
	st, err := embedded.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := MustServer(t, st)
	s.Capabilities = embeddedCapabilities(st)
	s.PageSize = 100
	keys, err := api.NewKeys(map[string]string{keyA: "a", keyB: "b"})
	if err != nil {
		t.Fatal(err)
	}
	s.Keys = keys

	call := func(key, method, path, body string) (int, string) {
		t.Helper()
		var r io.Reader
		if body != "" {
			r = bytes.NewReader([]byte(body))
		}
		req := httptest.NewRequest(method, path, r)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	mustA := func(method, path, body string, want int) string {
		t.Helper()
		code, out := call(keyA, method, path, body)
		if code != want {
			t.Fatalf("tenant A %s %s: %d %s, want %d", method, path, code, out, want)
		}
		return out
	}

	put := func(ns, id, parent, run string) string {
		b, _ := json.Marshal(map[string]any{
			"checkpoint_ns": ns, "checkpoint_id": id, "parent_checkpoint_id": parent,
			"checkpoint":       map[string]any{"type": "msgpack", "data": []byte("body-" + id)},
			"metadata":         map[string]any{"source": "loop", "step": 1, "run_id": run},
			"channel_versions": map[string]any{"a": "1"},
			"blobs":            []any{map[string]any{"channel": "a", "version": "1", "value": map[string]any{"type": "msgpack", "data": []byte("v")}}},
		})
		return string(b)
	}
	mustA("POST", "/v1/threads/ta/checkpoints", put("", "c1", "", "run-a"), 200)
	mustA("POST", "/v1/threads/ta/checkpoints", put("", "c2", "c1", "run-a"), 200)
	mustA("POST", "/v1/threads/ta/checkpoints", put("sub:1", "c3", "", "run-a"), 200)
	mustA("POST", "/v1/threads/ta/writes", `{"checkpoint_id":"c2","writes":[{"task_id":"t1","idx":-1,"channel":"__error__","value":{"type":"msgpack","data":"eA=="}}]}`, 204)
	claim := mustA("POST", "/v1/idempotency/claim", `{"key":"charge-a"}`, 200)
	var cl struct{ Token string }
	_ = json.Unmarshal([]byte(claim), &cl)
	mustA("POST", "/v1/idempotency/complete", `{"key":"charge-a","token":"`+cl.Token+`","result":{"type":"msgpack","data":"b2s="}}`, 204)

	snapshot := func() string {
		return mustA("POST", "/v1/checkpoints/search", `{}`, 200) +
			mustA("GET", "/v1/threads/ta/tree", "", 200) +
			mustA("POST", "/v1/idempotency/claim", `{"key":"charge-a"}`, 200)
	}
	before := snapshot()

	tests := []struct {
		method, path, body string
		want               []int // acceptable statuses for B
	}{
		{"GET", "/v1/threads/ta/checkpoint", "", []int{404}},
		{"GET", "/v1/threads/ta/checkpoint?checkpoint_id=c1", "", []int{404}},
		{"GET", "/v1/threads/ta/checkpoint?checkpoint_ns=sub:1", "", []int{404}},
		{"POST", "/v1/threads/ta/copy", `{"target_thread_id":"stolen"}`, []int{404}},
		{"GET", "/v1/threads/ta/tree", "", []int{404}},
		{"GET", "/v1/threads/ta/tree/path?checkpoint_id=c2", "", []int{404}},
		{"GET", "/v1/threads/ta/tree/children?checkpoint_id=c1", "", []int{404}},
		{"GET", "/v1/threads/ta/tree/leaves", "", []int{404}},
		{"GET", "/v1/threads/ta/tree/abandoned", "", []int{404}},
		{"GET", "/v1/threads/ta/tree/context", "", []int{404}},
		{"POST", "/v1/threads/ta/checkpoints/pin", `{"checkpoint_id":"c1"}`, []int{404}},
		{"POST", "/v1/idempotency/complete", `{"key":"charge-a","token":"` + cl.Token + `","result":{"type":"msgpack","data":""}}`, []int{404, 409}},
		{"POST", "/v1/idempotency/fail", `{"key":"charge-a","token":"` + cl.Token + `","error":{"message":"x"}}`, []int{404, 409}},
		// Writes and deletes land in B's own space or do nothing.
		{"POST", "/v1/threads/ta/writes", `{"checkpoint_id":"c2","writes":[{"task_id":"t1","idx":-1,"channel":"__error__","value":{"type":"msgpack","data":"eQ=="}}]}`, []int{204}},
		{"POST", "/v1/threads/ta/checkpoints", put("", "c2", "c1", "run-a"), []int{200}},
		{"POST", "/v1/threads/prune", `{"thread_ids":["ta"],"strategy":"keep_latest"}`, []int{204}},
		{"POST", "/v1/threads/prune", `{"thread_ids":["ta"],"strategy":"delete"}`, []int{204}},
		{"POST", "/v1/runs/delete", `{"run_ids":["run-a"]}`, []int{204}},
		{"DELETE", "/v1/threads/ta", "", []int{204}},
		{"POST", "/v1/idempotency/claim", `{"key":"charge-a"}`, []int{200}},
	}
	for _, tt := range tests {
		code, out := call(keyB, tt.method, tt.path, tt.body)
		ok := false
		for _, w := range tt.want {
			ok = ok || code == w
		}
		if !ok {
			t.Errorf("tenant B %s %s: %d %s, want one of %v", tt.method, tt.path, code, out, tt.want)
		}
		if bytes.Contains([]byte(out), []byte("body-c")) || bytes.Contains([]byte(out), []byte(`"b2s="`)) {
			t.Errorf("tenant B %s %s saw tenant A's data: %s", tt.method, tt.path, out)
		}
	}
	// B's listing shows only what B wrote itself.
	if code, out := call(keyB, "POST", "/v1/checkpoints/search", `{"thread_id":"ta"}`); code != 200 || bytes.Contains([]byte(out), []byte("sub:1")) {
		t.Errorf("tenant B search: %d %s", code, out)
	}

	if after := snapshot(); after != before {
		t.Fatalf("tenant A's data changed:\nbefore %s\nafter  %s", before, after)
	}
}
