package api_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/embedded"
	"github.com/saver-dev/saver/storetest"
)

// TestDeltaHistoryKnown: a client that holds the history at an ancestor
// names it as known and is answered what is new since: the writes down to
// it, its own included, with next naming it, even to a request that is not
// paged. A known the chain does not reach is refused with 400 naming it.
func TestDeltaHistoryKnown(t *testing.T) {
	st, err := embedded.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatalf("embedded.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	ref := saver.CheckpointRef{Tenant: "default", ThreadID: "t"}
	storetest.PutChat(t, st, ref, 10, 1)
	fork := saver.CheckpointRef{Tenant: "default", ThreadID: "f"}
	storetest.PutChat(t, st, fork, 4)
	storetest.PutDelta(t, st, fork, "0005", "0002", []string{"messages=5:"}, "messages")
	s := MustServer(t, st)
	post := func(thread, id, known string) (deltaAnswer, string) {
		body, _ := json.Marshal(map[string]any{"checkpoint_id": id, "channels": []string{"messages"}, "known": known})
		rec := do(t, s, "POST", "/v1/threads/"+thread+"/delta-history", "application/json", body)
		a := deltaAnswer{code: rec.Code}
		if rec.Code == 200 {
			if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
				t.Fatalf("answer: %v", err)
			}
			return a, ""
		}
		a.error = errorCode(t, rec)
		return a, rec.Body.String()
	}

	a, _ := post("t", "0010", "0007")
	h := a.Channels["messages"]
	if a.code != 200 || h.Next != "0007" || h.Seed != nil {
		t.Fatalf("known 0007: %d, next %q, seed %v; want 200, next 0007, no seed", a.code, h.Next, h.Seed)
	}
	got := storetest.WriteValues(&saver.Tuple{Writes: h.Writes})
	if want := storetest.ChatWrites(7, 9); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("known 0007: writes %v, want %v", got, want)
	}
	// Without known, the whole history.
	if a, _ := post("t", "0010", ""); a.code != 200 || a.Channels["messages"].Next != "" || len(a.Channels["messages"].Writes) != 9 {
		t.Fatalf("no known: %d, next %q, %d writes; want 200, no next, 9 writes", a.code, a.Channels["messages"].Next, len(a.Channels["messages"].Writes))
	}

	for _, tt := range []struct{ name, thread, id, known string }{
		{"OtherBranch", "f", "0005", "0004"},
		{"Unknown", "f", "0005", "0042"},
		{"Target", "t", "0010", "0010"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, body := post(tt.thread, tt.id, tt.known)
			if a.code != 400 || a.error != saver.EINVALID || !strings.Contains(body, "known") {
				t.Fatalf("known %s at %s: %d %s %s; want 400 invalid naming known", tt.known, tt.id, a.code, a.error, body)
			}
		})
	}
}
