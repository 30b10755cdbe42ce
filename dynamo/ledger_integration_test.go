//go:build integration

package dynamo_test

import (
	"testing"
	"time"

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
		if winner := storetest.RaceClaims(t, l, in, n); winner.Attempt != attempt {
			t.Fatalf("attempt %d: winner %+v", attempt, winner)
		}
		if got := st.DBRequests.Snapshot(); got["UpdateItem"] != n || st.DBRequests.Total() != n {
			t.Fatalf("attempt %d: %d claims sent %v, want %d UpdateItem", attempt, n, got, n)
		}
		clock.Advance(in.Lease + time.Second)
	}
}
