package api_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/api/apitest"
)

// labels records what the server tells its Observer.
type labels struct {
	mu   sync.Mutex
	seen map[[2]string]int
}

func (l *labels) ObserveRequest(route, method string, _ int, _ time.Duration, _, _ int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen[[2]string{route, method}]++
}

func (l *labels) ObserveClaim(string)  {}
func (l *labels) ObserveItemOp(string) {}

// TestObserverLabels: any method string a client sent, and any path echo
// half-matched, reached the Observer and so became a metrics label. Only the
// methods and routes the server serves do; the rest are "other" and
// "unmatched".
func TestObserverLabels(t *testing.T) {
	s := MustMockServer(t, &apitest.Store{GetTupleFn: func(_ context.Context, ref saver.CheckpointRef) (*saver.Tuple, error) {
		return &saver.Tuple{Checkpoint: saver.Checkpoint{CheckpointRef: ref}}, nil
	}})
	l := &labels{seen: map[[2]string]int{}}
	s.Observer = l
	for i := 0; i < 100; i++ {
		do(t, s, fmt.Sprintf("M%d", i), "/v1/threads/t/checkpoint", "", nil)
		do(t, s, "GET", fmt.Sprintf("/v1/threads/t/nope%d", i), "", nil)
		do(t, s, fmt.Sprintf("M%d", i), fmt.Sprintf("/x%d", i), "", nil)
	}
	do(t, s, "GET", "/v1/threads/t/checkpoint", "", nil)
	// A made-up method on a served path matches no route either.
	want := map[[2]string]int{
		{"unmatched", "GET"}:                         100,
		{"unmatched", "other"}:                       200,
		{"/v1/threads/:thread_id/checkpoint", "GET"}: 1,
	}
	for k, n := range l.seen {
		if want[k] != n {
			t.Errorf("label %v seen %d times, want %d", k, n, want[k])
		}
	}
	if len(l.seen) != len(want) {
		t.Errorf("labels %v, want %v", l.seen, want)
	}
}
