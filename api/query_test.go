package api_test

import (
	"context"
	"testing"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/api/apitest"
)

// TestQueryStrict: a query string that does not parse (a bad %-escape, a
// ";") used to lose the broken parameter silently, so the checkpoint route
// answered with the latest checkpoint and the tree routes for the head; a
// repeated parameter was cut to its first value. Both are 400s on every
// route.
func TestQueryStrict(t *testing.T) {
	tests := []struct{ name, path string }{
		{"GetBadEscape", "/v1/threads/t/checkpoint?checkpoint_id=c1%zz"},
		{"GetSemicolon", "/v1/threads/t/checkpoint?checkpoint_id=c1;x"},
		{"GetRepeated", "/v1/threads/t/checkpoint?checkpoint_id=c1&checkpoint_id=c2"},
		{"GetRepeatedEmpty", "/v1/threads/t/checkpoint?checkpoint_ns=&checkpoint_ns="},
		{"GetTruncatedEscape", "/v1/threads/t/checkpoint?checkpoint_id=c1%2"},
		{"TreePathBadEscape", "/v1/threads/t/tree/path?checkpoint_id=c1%zz"},
		{"TreeChildrenSemicolon", "/v1/threads/t/tree/children?checkpoint_id=c1;x"},
		{"TreeChildrenRepeated", "/v1/threads/t/tree/children?checkpoint_id=c1&checkpoint_id=c1"},
		{"TreeContextRepeated", "/v1/threads/t/tree/context?limit=1&limit=2"},
		{"TreeBadEscapeInName", "/v1/threads/t/tree?%zz=1"},
		{"Health", "/healthz?x=%zz"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := MustMockServer(t, &apitest.Store{}) // the store is never reached
			rec := do(t, s, "GET", tt.path, "", nil)
			if got, want := rec.Code, 400; got != want {
				t.Fatalf("Code=%d, want %d (body %s)", got, want, rec.Body)
			}
			if got, want := errorCode(t, rec), saver.EINVALID; got != want {
				t.Fatalf("code=%q, want %q", got, want)
			}
		})
	}
}

// TestQueryStrict_Accepts: escapes that decode, and an empty value for "the
// latest", still work.
func TestQueryStrict_Accepts(t *testing.T) {
	var got []saver.CheckpointRef
	s := MustMockServer(t, &apitest.Store{GetTupleFn: func(_ context.Context, ref saver.CheckpointRef) (*saver.Tuple, error) {
		got = append(got, ref)
		return &saver.Tuple{Checkpoint: saver.Checkpoint{CheckpointRef: ref}}, nil
	}})
	for path, want := range map[string]saver.CheckpointRef{
		"/v1/threads/t/checkpoint?checkpoint_id=c%201&checkpoint_ns=a%7Cb": {ThreadID: "t", NS: "a|b", ID: "c 1"},
		"/v1/threads/t/checkpoint?checkpoint_id=c+2":                       {ThreadID: "t", ID: "c 2"},
		"/v1/threads/t/checkpoint?checkpoint_id=":                          {ThreadID: "t"},
	} {
		got = nil
		rec := do(t, s, "GET", path, "", nil)
		if rec.Code != 200 {
			t.Fatalf("%s: Code=%d, body %s", path, rec.Code, rec.Body)
		}
		want.Tenant = got[0].Tenant
		if got[0] != want {
			t.Fatalf("%s: ref %+v, want %+v", path, got[0], want)
		}
	}
}
