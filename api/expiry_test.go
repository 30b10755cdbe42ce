package api_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/api/apitest"
	"github.com/saver-dev/saver/ttl"
)

func TestExpiry(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	var put saver.PutCheckpoint
	var writes saver.PutWrites
	type setExpiry struct {
		ref saver.CheckpointRef
		exp int64
	}
	var set []setExpiry
	stored := &saver.Tuple{Checkpoint: saver.Checkpoint{
		CheckpointRef: saver.CheckpointRef{ThreadID: "t", ID: "c1"},
		Body:          saver.Typed{Type: "msgpack"},
		Scope:         saver.ScopeSession,
		ExpiresAt:     now.Unix() + 600, // second half of a 1h lifetime
	}}
	s := MustMockServer(t, &apitest.Store{
		PutCheckpointFn: func(_ context.Context, in saver.PutCheckpoint) error { put = in; return nil },
		PutWritesFn:     func(_ context.Context, in saver.PutWrites) error { writes = in; return nil },
		GetTupleFn: func(context.Context, saver.CheckpointRef) (*saver.Tuple, error) {
			cp := *stored
			return &cp, nil
		},
		SetExpiryFn: func(_ context.Context, ref saver.CheckpointRef, exp int64) error {
			set = append(set, setExpiry{ref, exp})
			return nil
		},
	})
	s.Now = func() time.Time { return now }
	s.TTL = ttl.Policy{Default: saver.ScopePersistent, Session: time.Hour, RefreshOnRead: true}

	body := putBody()
	body["scope"] = "session"
	b, _ := json.Marshal(body)
	if rec := do(t, s, "POST", "/v1/threads/t/checkpoints", "application/json", b); rec.Code != 200 {
		t.Fatalf("put: Code=%d body %s", rec.Code, rec.Body)
	}
	if put.Scope != saver.ScopeSession || put.ExpiresAt != now.Unix()+3600 {
		t.Fatalf("put scope=%q expires=%d, want session and now+1h", put.Scope, put.ExpiresAt)
	}

	w := `{"checkpoint_id":"c1","scope":"session","writes":[{"task_id":"t","idx":0,"channel":"a","value":{"type":"null","data":""}}]}`
	if rec := do(t, s, "POST", "/v1/threads/t/writes", "application/json", []byte(w)); rec.Code != 204 {
		t.Fatalf("writes: Code=%d body %s", rec.Code, rec.Body)
	}
	if writes.ExpiresAt != now.Unix()+3600 {
		t.Fatalf("writes expire at %d, want now+1h", writes.ExpiresAt)
	}

	rec := do(t, s, "GET", "/v1/threads/t/checkpoint", "", nil)
	var got struct {
		ExpiresAt int64 `json:"expires_at"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &got)
	if len(set) != 1 || set[0].exp != now.Unix()+3600 || got.ExpiresAt != now.Unix()+3600 {
		t.Fatalf("refresh on read: calls %+v, answered expires_at %d", set, got.ExpiresAt)
	}

	rec = do(t, s, "POST", "/v1/threads/t/checkpoints/pin", "application/json", []byte(`{"checkpoint_id":"c1"}`))
	if rec.Code != 204 || len(set) != 2 || set[1].exp != 0 || set[1].ref.ID != "c1" {
		t.Fatalf("pin: Code=%d calls %+v", rec.Code, set)
	}

	for _, tt := range []struct{ name, path, body string }{
		{"BadScopePut", "/v1/threads/t/checkpoints", `{"checkpoint_id":"c","checkpoint":{"type":"msgpack","data":""},"scope":"forever"}`},
		{"BadScopeWrites", "/v1/threads/t/writes", `{"checkpoint_id":"c","writes":[],"scope":"weekly"}`},
		{"PinWithoutID", "/v1/threads/t/checkpoints/pin", `{"checkpoint_ns":""}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := do(t, s, "POST", tt.path, "application/json", []byte(tt.body))
			if rec.Code != 400 || errorCode(t, rec) != "invalid" {
				t.Fatalf("Code=%d body %s", rec.Code, rec.Body)
			}
		})
	}
}

func TestExpectedHead(t *testing.T) {
	var got saver.PutCheckpoint
	st := &apitest.Store{PutCheckpointFn: func(_ context.Context, in saver.PutCheckpoint) error {
		got = in
		if in.ExpectHead != nil && *in.ExpectHead != "c0" {
			return saver.Errorf(saver.ECONFLICT, "The head moved.")
		}
		return nil
	}}
	body := func(head any) []byte {
		b := putBody()
		b["expected_head"] = head
		out, _ := json.Marshal(b)
		return out
	}
	// A store that does not guard the head refuses the condition rather
	// than ignoring it.
	plain := MustMockServer(t, st)
	if rec := do(t, plain, "POST", "/v1/threads/t/checkpoints", "application/json", body("c0")); rec.Code != 400 || errorCode(t, rec) != "invalid" {
		t.Fatalf("unguarded store: Code=%d body %s", rec.Code, rec.Body)
	}
	s := MustMockServer(t, st)
	s.HeadGuard = true
	if rec := do(t, s, "POST", "/v1/threads/t/checkpoints", "application/json", body("c0")); rec.Code != 200 || got.ExpectHead == nil || *got.ExpectHead != "c0" {
		t.Fatalf("expected head c0: Code=%d body %s got %+v", rec.Code, rec.Body, got.ExpectHead)
	}
	if rec := do(t, s, "POST", "/v1/threads/t/checkpoints", "application/json", body("zz")); rec.Code != 409 || errorCode(t, rec) != "conflict" {
		t.Fatalf("moved head: Code=%d body %s", rec.Code, rec.Body)
	}
	if rec := do(t, s, "POST", "/v1/threads/t/checkpoints", "application/json", body(nil)); rec.Code != 200 || got.ExpectHead != nil {
		t.Fatalf("no condition: Code=%d head %v", rec.Code, got.ExpectHead)
	}
}
