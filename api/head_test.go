package api_test

import (
	"context"
	"testing"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/api/apitest"
)

// TestHead: HEAD on a GET route answered 404 or 405, since echo registers
// no HEAD routes. It now answers as GET would, without the body, and is
// still counted as HEAD.
func TestHead(t *testing.T) {
	s := MustMockServer(t, &apitest.Store{GetTupleFn: func(_ context.Context, ref saver.CheckpointRef) (*saver.Tuple, error) {
		if ref.ID == "gone" {
			return nil, saver.Errorf(saver.ENOTFOUND, "No checkpoint.")
		}
		return &saver.Tuple{Checkpoint: saver.Checkpoint{CheckpointRef: ref}}, nil
	}})
	l := &labels{seen: map[[2]string]int{}}
	s.Observer = l
	tests := []struct {
		path   string
		status int
	}{
		{"/healthz", 200},
		{"/readyz", 200},
		{"/openapi.yaml", 200},
		{"/v1/threads/t/checkpoint", 200},
		{"/v1/threads/t/checkpoint?checkpoint_id=gone", 404},
		{"/v1/threads/t/checkpoints", 404}, // POST only: the v1 group's catch-all answers
	}
	for _, tt := range tests {
		get := do(t, s, "GET", tt.path, "", nil)
		head := do(t, s, "HEAD", tt.path, "", nil)
		if head.Code != tt.status {
			t.Errorf("HEAD %s: Code=%d, want %d", tt.path, head.Code, tt.status)
		}
		if head.Code != get.Code {
			t.Errorf("HEAD %s: Code=%d, GET %d", tt.path, head.Code, get.Code)
		}
		if head.Body.Len() != 0 {
			t.Errorf("HEAD %s wrote a body: %q", tt.path, head.Body)
		}
		if got, want := head.Header().Get("Content-Type"), get.Header().Get("Content-Type"); tt.status == 200 && got != want {
			t.Errorf("HEAD %s: Content-Type %q, GET %q", tt.path, got, want)
		}
	}
	if n := l.seen[[2]string{"/v1/threads/:thread_id/checkpoint", "HEAD"}]; n != 2 {
		t.Errorf("HEAD on the checkpoint route counted %d times as HEAD, want 2 (labels %v)", n, l.seen)
	}
}
