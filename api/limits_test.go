package api_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/mock"
)

// TestCheckpointIDKeyLength: a namespace of 100 "!" and a checkpoint id of
// 256 "!" were each within their limits but together built a DynamoDB sort
// key of 1,072 bytes, which the store answered with 413 "item too large".
// Every route that takes a checkpoint id refuses such an id up front with a
// 400 naming the field, before any store call.
func TestCheckpointIDKeyLength(t *testing.T) {
	id := strings.Repeat("!", saver.MaxIDBytes)
	ns := strings.Repeat("!", 100)
	js := func(v map[string]any) []byte { b, _ := json.Marshal(v); return b }
	put := putBody()
	put["checkpoint_ns"], put["checkpoint_id"] = ns, id
	tests := []struct {
		name, method, path string
		body               []byte
		field              string
	}{
		{"Put", "POST", "/v1/threads/t/checkpoints", js(put), "checkpoint_id"},
		{"PutParent", "POST", "/v1/threads/t/checkpoints", js(func() map[string]any {
			b := putBody()
			b["parent_checkpoint_id"] = id
			return b
		}()), "parent_checkpoint_id"},
		{"Writes", "POST", "/v1/threads/t/writes", js(map[string]any{"checkpoint_ns": ns, "checkpoint_id": id, "writes": []any{}}), "checkpoint_id"},
		{"Get", "GET", "/v1/threads/t/checkpoint?checkpoint_ns=" + url.QueryEscape(ns) + "&checkpoint_id=" + url.QueryEscape(id), nil, "checkpoint_id"},
		{"SearchID", "POST", "/v1/checkpoints/search", js(map[string]any{"checkpoint_id": id}), "checkpoint_id"},
		{"SearchBefore", "POST", "/v1/checkpoints/search", js(map[string]any{"before": id}), "before"},
		{"TreePath", "GET", "/v1/threads/t/tree/path?checkpoint_id=" + url.QueryEscape(id), nil, "checkpoint_id"},
		{"TreeChildren", "GET", "/v1/threads/t/tree/children?checkpoint_ns=" + url.QueryEscape(ns) + "&checkpoint_id=" + url.QueryEscape(id), nil, "checkpoint_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Only the tree's read of links is allowed; nothing may be stored.
			s := MustMockServer(t, &mock.Store{ListNodesFn: func(context.Context, string, string) ([]saver.Node, error) {
				return []saver.Node{{ThreadID: "t", ID: "c1"}}, nil
			}})
			ctype := ""
			if tt.body != nil {
				ctype = "application/json"
			}
			rec := do(t, s, tt.method, tt.path, ctype, tt.body)
			if got, want := rec.Code, 400; got != want {
				t.Fatalf("Code=%d, want %d (body %s)", got, want, rec.Body)
			}
			if got, want := errorCode(t, rec), saver.EINVALID; got != want {
				t.Fatalf("code=%q, want %q", got, want)
			}
			if !strings.Contains(rec.Body.String(), tt.field+" takes") {
				t.Fatalf("the message does not name %s: %s", tt.field, rec.Body)
			}
		})
	}
}

// TestClaimDurationsOutOfRange: lease_ms=288230376151712504 (2^58 + 1000) was
// multiplied into a time.Duration, wrapped around and granted as a
// one-second lease. Durations out of range are refused before the ledger
// sees them, whatever the codec.
func TestClaimDurationsOutOfRange(t *testing.T) {
	tests := []struct {
		name, ctype string
		body        []byte
	}{
		{"LeaseWrapsToOneSecond", "application/json", []byte(`{"key":"k","lease_ms":288230376151712504}`)},
		{"LeaseMaxInt64", "application/json", []byte(`{"key":"k","lease_ms":9223372036854775807}`)},
		{"LeaseOverAnHour", "application/json", []byte(`{"key":"k","lease_ms":3600001}`)},
		{"LeaseZero", "application/json", []byte(`{"key":"k","lease_ms":0}`)},
		{"LeaseNegative", "application/json", []byte(`{"key":"k","lease_ms":-1000}`)},
		{"TTLWrapsToOneDay", "application/json", []byte(`{"key":"k","ttl_ms":288230376238111744}`)},
		{"TTLNegative", "application/json", []byte(`{"key":"k","ttl_ms":-1}`)},
		{"LeaseUint64Msgpack", "application/msgpack", mpMap("key", "k", "lease_ms", raw{0xcf, 0x04, 0, 0, 0, 0, 0, 0x03, 0xe8})},
		{"LeaseHugeUint64Msgpack", "application/msgpack", mpMap("key", "k", "lease_ms", raw{0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := MustMockServer(t, &mock.Store{ClaimFn: func(_ context.Context, in saver.ClaimRequest) (*saver.Claim, error) {
				t.Errorf("claim reached the ledger with lease %s, ttl %s", in.Lease, in.TTL)
				return &saver.Claim{Key: in.Key, State: saver.ClaimClaimed, Token: "t", Attempt: 1}, nil
			}})
			rec := do(t, s, "POST", "/v1/idempotency/claim", tt.ctype, tt.body)
			if got, want := rec.Code, 400; got != want {
				t.Fatalf("Code=%d, want %d (body %s)", got, want, rec.Body)
			}
			if got, want := errorCode(t, rec), saver.EINVALID; got != want {
				t.Fatalf("code=%q, want %q", got, want)
			}
		})
	}
}
