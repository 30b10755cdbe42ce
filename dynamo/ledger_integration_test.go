//go:build integration

package dynamo_test

import (
	"sync"
	"testing"
	"time"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/localstack"
	"github.com/saver-dev/saver/storetest"
)

// TestClaimRace has 32 callers claim one key at once on the emulator, first
// when the key is new, then when its lease has run out: each time exactly
// one is granted, the others see its lease, and every claim is one request.
func TestClaimRace(t *testing.T) {
	const n = 32
	st := localstack.MustStore(t)
	clock := storetest.NewClock()
	l := withClock(st.Store, clock.Now)
	in := storetest.NewClaim()
	for attempt := 1; attempt <= 2; attempt++ {
		st.DBRequests.Reset()
		claims := make([]*saver.Claim, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				c, err := l.Claim(t.Context(), in)
				if err != nil {
					t.Errorf("Claim %d: %v", i, err)
				}
				claims[i] = c
			})
		}
		close(start)
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		var winner *saver.Claim
		for _, c := range claims {
			if c.State == saver.ClaimClaimed {
				if winner != nil {
					t.Fatalf("attempt %d: two claims granted, tokens %q and %q", attempt, winner.Token, c.Token)
				}
				winner = c
			}
		}
		if winner == nil || winner.Attempt != attempt {
			t.Fatalf("attempt %d: winner %+v", attempt, winner)
		}
		for _, c := range claims {
			if c != winner && (c.State != saver.ClaimInProgress || !c.LeaseExpiresAt.Equal(winner.LeaseExpiresAt) || c.Attempt != attempt) {
				t.Fatalf("attempt %d: a losing claim is %+v, want in progress under %+v", attempt, c, winner)
			}
		}
		if got := st.DBRequests.Snapshot(); got["UpdateItem"] != n || st.DBRequests.Total() != n {
			t.Fatalf("attempt %d: %d claims sent %v, want %d UpdateItem", attempt, n, got, n)
		}
		clock.Advance(in.Lease + time.Second)
	}
}
