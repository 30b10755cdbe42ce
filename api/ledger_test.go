package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/api"
	"github.com/saver-dev/saver/api/apitest"
)

func TestLedger(t *testing.T) {
	var gotClaim saver.ClaimRequest
	var gotResult saver.Typed
	lease := time.UnixMilli(1_800_000_000_000)
	s := MustMockServer(t, &apitest.Store{
		ClaimFn: func(_ context.Context, in saver.ClaimRequest) (*saver.Claim, error) {
			gotClaim = in
			return &saver.Claim{Key: in.Key, State: saver.ClaimClaimed, Token: "tok", LeaseExpiresAt: lease, Attempt: 1}, nil
		},
		CompleteFn: func(_ context.Context, _, key, token string, r saver.Typed) error {
			if token != "tok" {
				return saver.Errorf(saver.ECONFLICT, "Lease lost.")
			}
			gotResult = r
			return nil
		},
		FailFn: func(context.Context, string, string, string, saver.ClaimError) error { return nil },
	})

	rec := do(t, s, "POST", "/v1/idempotency/claim", "application/json", []byte(`{"key":"charge-1"}`))
	if rec.Code != 200 {
		t.Fatalf("claim: Code=%d body %s", rec.Code, rec.Body)
	}
	var cl map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &cl)
	if cl["state"] != "claimed" || cl["token"] != "tok" || cl["lease_expires_at_ms"] != float64(lease.UnixMilli()) {
		t.Fatalf("claim body %s", rec.Body)
	}
	if gotClaim.Lease != api.DefaultLease || gotClaim.TTL != api.DefaultKeyTTL || gotClaim.Tenant != api.DefaultTenant {
		t.Fatalf("claim defaults not applied: %+v", gotClaim)
	}

	rec = do(t, s, "POST", "/v1/idempotency/complete", "application/json", []byte(`{"key":"charge-1","token":"tok","result":{"type":"msgpack","data":"AQ=="}}`))
	if rec.Code != 204 || gotResult.Type != "msgpack" || len(gotResult.Data) != 1 {
		t.Fatalf("complete: Code=%d body %s result %+v", rec.Code, rec.Body, gotResult)
	}

	for _, tt := range []struct {
		name, path, body string
		status           int
		code             string
	}{
		{"ClaimNoKey", "/v1/idempotency/claim", `{}`, 400, "invalid"},
		{"ClaimZeroLease", "/v1/idempotency/claim", `{"key":"k","lease_ms":0}`, 400, "invalid"},
		{"ClaimHugeLease", "/v1/idempotency/claim", `{"key":"k","lease_ms":99999999999}`, 400, "invalid"},
		{"ClaimTTLBelowLease", "/v1/idempotency/claim", `{"key":"k","lease_ms":60000,"ttl_ms":1000}`, 400, "invalid"},
		{"ClaimIDTooLong", "/v1/idempotency/claim", `{"key":"k","claim_id":"` + strings.Repeat("c", saver.MaxClaimIDLen+1) + `"}`, 400, "invalid"},
		{"CompleteNoToken", "/v1/idempotency/complete", `{"key":"k","result":{"type":"msgpack","data":""}}`, 400, "invalid"},
		{"CompleteNoResult", "/v1/idempotency/complete", `{"key":"k","token":"tok"}`, 400, "invalid"},
		{"CompleteStaleToken", "/v1/idempotency/complete", `{"key":"k","token":"old","result":{"type":"msgpack","data":""}}`, 409, "conflict"},
		{"FailUnknownField", "/v1/idempotency/fail", `{"key":"k","token":"t","oops":1}`, 400, "invalid"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := do(t, s, "POST", tt.path, "application/json", []byte(tt.body))
			if rec.Code != tt.status || errorCode(t, rec) != tt.code {
				t.Fatalf("Code=%d body %s, want %d %s", rec.Code, rec.Body, tt.status, tt.code)
			}
		})
	}
}
