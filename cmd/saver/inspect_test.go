package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saver-dev/saver/api"
	"github.com/saver-dev/saver/embedded"
)

// inspectFixture serves a real store with one forked thread: c1 → c2 (failed,
// abandoned) and c1 → c3 → c4 (live).
func inspectFixture(t *testing.T) string {
	t.Helper()
	st, err := embedded.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := api.NewServer(st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	s.Capabilities = embeddedCapabilities(st)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	post := func(path string, body any) {
		b, _ := json.Marshal(body)
		resp, err := http.Post(srv.URL+path, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("POST %s: %d", path, resp.StatusCode)
		}
	}
	put := func(id, parent string, step int, versions map[string]string, blobs []any) {
		post("/v1/threads/order%2F42/checkpoints", map[string]any{
			"checkpoint_id": id, "parent_checkpoint_id": parent,
			"checkpoint":       map[string]any{"type": "msgpack", "data": []byte{0x80}},
			"metadata":         map[string]any{"source": "loop", "step": step},
			"channel_versions": versions, "blobs": blobs,
		})
	}
	blob := func(ch, v string, n int) any {
		return map[string]any{"channel": ch, "version": v, "value": map[string]any{"type": "msgpack", "data": bytes.Repeat([]byte{1}, n)}}
	}
	put("c1", "", 0, map[string]string{"messages": "1"}, []any{blob("messages", "1", 10)})
	put("c2", "c1", 1, map[string]string{"messages": "2"}, []any{blob("messages", "2", 20)})
	post("/v1/threads/order%2F42/writes", map[string]any{"checkpoint_id": "c2", "writes": []any{
		map[string]any{"task_id": "t1", "idx": -1, "channel": "__error__", "value": map[string]any{"type": "msgpack", "data": []byte{2}}}}})
	put("c3", "c1", 1, map[string]string{"messages": "3", "order": "1"}, []any{blob("messages", "3", 30), blob("order", "1", 5)})
	put("c4", "c3", 2, map[string]string{"messages": "4", "order": "1"}, []any{blob("messages", "4", 40)})
	return srv.URL
}

func inspect(t *testing.T, url string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := run(context.Background(), append([]string{"inspect", "-url", url}, args...),
		func(string) string { return "" }, &out, io.Discard)
	return out.String(), err
}

func TestInspect(t *testing.T) {
	url := inspectFixture(t)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"Threads", []string{"threads"}, []string{"order/42", "c4", "4"}},
		{"Tree", []string{"tree", "order/42"}, []string{"c1", "c2", "c3", "c4", "abandoned", "live path:"}},
		{"Checkpoint", []string{"checkpoint", "order/42"}, []string{"checkpoint c4", "parent     c3", "messages  4", "40", "order", "pending writes: 0"}},
		{"CheckpointWithWrites", []string{"checkpoint", "order/42", "c2"}, []string{"checkpoint c2", "pending writes: 1", "__error__"}},
		{"Diff", []string{"diff", "order/42", "c2", "c4"}, []string{"messages", "2", "4", "order", "-"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := inspect(t, url, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Fatalf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}

	out, err := inspect(t, url, "-json", "diff", "order/42", "c3", "c4")
	if err != nil {
		t.Fatal(err)
	}
	var changes []versionChange
	if err := json.Unmarshal([]byte(out), &changes); err != nil || len(changes) != 1 || changes[0] != (versionChange{"messages", "3", "4"}) {
		t.Fatalf("json diff %q (err %v)", out, err)
	}
	out, err = inspect(t, url, "-json", "threads")
	var threads []threadSummary
	if err != nil || json.Unmarshal([]byte(out), &threads) != nil || len(threads) != 1 || threads[0].Checkpoints != 4 {
		t.Fatalf("json threads %q (err %v)", out, err)
	}

	if _, err := inspect(t, url, "tree", "nobody"); err == nil || !strings.Contains(err.Error(), "not_found") {
		t.Fatalf("missing thread: err=%v", err)
	}
	if _, err := inspect(t, url, "frobnicate"); err == nil {
		t.Fatal("unknown command accepted")
	}
}

func TestInspectDeltaChannel(t *testing.T) {
	url := inspectFixture(t)
	post := func(path string, body any) {
		b, _ := json.Marshal(body)
		resp, err := http.Post(url+path, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("POST %s: %d", path, resp.StatusCode)
		}
	}
	// A DeltaChannel thread: "notes" has a snapshot at d1, and no value at
	// d2 and d3, which LangGraph's metadata counts.
	delta := func(id, parent string, value []byte, counted bool) {
		md := map[string]any{"source": "loop", "step": 0}
		if counted {
			md["counters_since_delta_snapshot"] = map[string]any{"notes": []int{1, 1}}
		}
		typ := "empty"
		if value != nil {
			typ = "msgpack"
		}
		post("/v1/threads/chat/checkpoints", map[string]any{
			"checkpoint_id": id, "parent_checkpoint_id": parent,
			"checkpoint": map[string]any{"type": "msgpack", "data": []byte{0x80}}, "metadata": md,
			"channel_versions": map[string]string{"notes": id},
			"blobs":            []any{map[string]any{"channel": "notes", "version": id, "value": map[string]any{"type": typ, "data": value}}},
		})
		post("/v1/threads/chat/writes", map[string]any{"checkpoint_id": id, "writes": []any{
			map[string]any{"task_id": "t", "idx": 0, "channel": "notes", "value": map[string]any{"type": "msgpack", "data": []byte("abc")}}}})
	}
	delta("d1", "", bytes.Repeat([]byte{7}, 50), false)
	delta("d2", "d1", nil, true)
	delta("d3", "d2", nil, true)
	tests := []struct {
		id   string
		want string
	}{
		{"d3", "notes  2 writes (6 bytes) after a snapshot of 50 bytes"},
		{"d2", "notes  1 writes (3 bytes) after a snapshot of 50 bytes"},
	}
	for _, tt := range tests {
		out, err := inspect(t, url, "checkpoint", "chat", tt.id)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "DeltaChannels") || !strings.Contains(out, tt.want) {
			t.Fatalf("checkpoint %s: output lacks %q:\n%s", tt.id, tt.want, out)
		}
	}
	// A checkpoint that holds its value lists no DeltaChannel.
	if out, err := inspect(t, url, "checkpoint", "chat", "d1"); err != nil || strings.Contains(out, "DeltaChannels") {
		t.Fatalf("checkpoint d1: %v\n%s", err, out)
	}
}

// storeFixture serves a real store holding items under three namespaces, and
// one without the Store; it returns both URLs.
func storeFixture(t *testing.T) (string, string) {
	t.Helper()
	url := inspectFixture(t)
	body := `{"ops": [
		{"op": "put", "namespace": ["users", "u1", "memories"], "key": "food", "value": {"kind": "food", "text": "likes pizza"}},
		{"op": "put", "namespace": ["users", "u1", "memories"], "key": "long", "value": {"kind": "note", "text": "` + strings.Repeat("x", 200) + `"}},
		{"op": "put", "namespace": ["users", "u2", "memories"], "key": "tea", "value": {"kind": "food", "text": "green tea", "n": [1, 2]}},
		{"op": "put", "namespace": ["docs"], "key": "readme", "value": {"title": "hi"}}
	]}`
	resp, err := http.Post(url+"/v1/store/batch", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("put items: %d", resp.StatusCode)
	}
	st, err := embedded.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := api.NewServer(st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	caps := embeddedCapabilities(st)
	caps.Items = nil
	s.Capabilities = caps
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return url, srv.URL
}

func TestInspectStore(t *testing.T) {
	url, noStore := storeFixture(t)
	tests := []struct {
		name       string
		args       []string
		want, lack []string
	}{
		{"Namespaces", []string{"namespaces"}, []string{"docs\n", "users.u1.memories\n", "users.u2.memories\n"}, nil},
		{"NamespacesUnderPrefix", []string{"namespaces", "-prefix", "users", "-max-depth", "2"},
			[]string{"users.u1\n", "users.u2\n"}, []string{"docs", "memories"}},
		{"NamespacesPaged", []string{"namespaces", "-limit", "1"}, []string{"docs\n", "(the first 1; -offset 1 for more)"}, []string{"users"}},
		{"Items", []string{"items", "users.u1.memories"},
			[]string{"NAMESPACE", "KEY", "UPDATED", "food", `{"kind":"food","text":"likes pizza"}`, "long", "xxx…"}, []string{"tea", strings.Repeat("x", 100)}},
		{"ItemsUnderPrefixFiltered", []string{"items", "users", "-filter", `{"kind": "food"}`},
			[]string{"users.u1.memories  food", "users.u2.memories  tea"}, []string{"long", "readme"}},
		{"ItemsFlagsFirst", []string{"-limit", "1", "items", "users"}, []string{"(the first 1, newest update first; -offset 1 for more)"}, nil},
		{"Item", []string{"item", "users.u2.memories", "tea"},
			[]string{`item       "tea" in users.u2.memories`, "created    20", "updated    20", "\n  \"text\": \"green tea\",\n", "    1,\n"}, nil},
		{"NoItems", []string{"items", "nobody"}, []string{"no items under nobody"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := inspect(t, url, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Fatalf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.lack {
				if strings.Contains(out, w) {
					t.Fatalf("output has %q:\n%s", w, out)
				}
			}
		})
	}

	t.Run("JSON", func(t *testing.T) {
		out, err := inspect(t, url, "items", "users", "-json")
		var items []storeItemJSON
		if err != nil || json.Unmarshal([]byte(out), &items) != nil || len(items) != 3 {
			t.Fatalf("json items %q (err %v)", out, err)
		}
		// One batch put them all at once: ties go by namespace, then key.
		var tea map[string]any
		if items[0].Key != "food" || items[1].Key != "long" || items[2].Key != "tea" ||
			json.Unmarshal(items[2].Value, &tea) != nil || tea["text"] != "green tea" {
			t.Fatalf("items %s", out)
		}
		out, err = inspect(t, url, "-json", "namespaces")
		var nss [][]string
		if err != nil || json.Unmarshal([]byte(out), &nss) != nil || len(nss) != 3 || nsString(nss[0]) != "docs" {
			t.Fatalf("json namespaces %q (err %v)", out, err)
		}
		out, err = inspect(t, url, "-json", "namespaces", "-prefix", "nobody")
		if err != nil || strings.TrimSpace(out) != "[]" {
			t.Fatalf("json empty namespaces %q (err %v)", out, err)
		}
	})

	errs := []struct {
		name string
		url  string
		args []string
		want string
	}{
		{"MissingItem", url, []string{"item", "docs", "nope"}, `no item "nope" in docs`},
		{"EmptyLabel", url, []string{"items", "users..u1"}, "empty label"},
		{"BadFilter", url, []string{"items", "users", "-filter", "{"}, "-filter is not JSON"},
		{"FilterRefused", url, []string{"items", "users", "-filter", `{"n": {"$gt": "x"}}`}, "filter.n.$gt"},
		{"ItemNeedsKey", url, []string{"item", "docs"}, "bad command"},
		{"NoStore", noStore, []string{"namespaces"}, "does not serve the Store"},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			_, err := inspect(t, tt.url, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err=%v, want one saying %q", err, tt.want)
			}
		})
	}
}

func TestParseInterspersed(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"items", "a.b", "-limit", "5", "-json"}, "items a.b|5 true"},
		{[]string{"-json", "items", "-limit", "5", "a.b"}, "items a.b|5 true"},
		{[]string{"items", "--", "-limit", "5"}, "items -limit 5|50 false"},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		limit := fs.Int("limit", 50, "")
		asJSON := fs.Bool("json", false, "")
		rest, err := parseInterspersed(fs, tt.args)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%s|%d %v", strings.Join(rest, " "), *limit, *asJSON); got != tt.want {
			t.Errorf("%q: %s, want %s", tt.args, got, tt.want)
		}
	}
}
