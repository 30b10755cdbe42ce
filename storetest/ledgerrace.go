package storetest

import (
	"sync"
	"testing"

	"github.com/saver-dev/saver"
)

var ledgerConcurrencyTests = []ledgerTest{
	{"Claims", testConcurrentClaims},
}

// testConcurrentClaims has 32 callers claim one key at once, in every state
// that grants a claim: exactly one is granted, and the others see its lease.
func testConcurrentClaims(t *testing.T, l LedgerStore, clock *Clock) {
	timeout := saver.ClaimError{Message: "timeout", Retryable: true}
	tests := []struct {
		name string
		// setup brings the key to the state under test.
		setup   func(t *testing.T, in saver.ClaimRequest)
		attempt int
		prev    *saver.ClaimError
	}{
		{"New", func(*testing.T, saver.ClaimRequest) {}, 1, nil},
		{"LeaseExpired", func(t *testing.T, in saver.ClaimRequest) {
			MustClaim(t, l, in)
			clock.Advance(in.Lease)
		}, 2, nil},
		{"RetryableFailure", func(t *testing.T, in saver.ClaimRequest) {
			c := MustClaim(t, l, in)
			MustFail(t, l, in.Tenant, in.Key, c.Token, timeout)
		}, 2, &timeout},
		{"KeyExpired", func(t *testing.T, in saver.ClaimRequest) {
			c := MustClaim(t, l, in)
			MustComplete(t, l, in.Tenant, in.Key, c.Token, Result("done"))
			clock.Advance(in.TTL)
		}, 1, nil},
	}
	for _, tt := range tests {
		// Sequential: the cases share the clock.
		t.Run(tt.name, func(t *testing.T) {
			in := NewClaim()
			tt.setup(t, in)
			winner := RaceClaims(t, l, in, 32)
			MustEqualClaim(t, winner, granted(in, clock.Now(), tt.attempt, tt.prev))
			MustComplete(t, l, in.Tenant, in.Key, winner.Token, Result("won"))
			MustClaimEqual(t, l, in, completed(in.Key, tt.attempt, Result("won")))
		})
	}
}

// RaceClaims runs n claims of in at once and returns the one granted,
// failing unless exactly one was and every other reported it in progress.
func RaceClaims(t *testing.T, l saver.Ledger, in saver.ClaimRequest, n int) *saver.Claim {
	t.Helper()
	if err := in.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
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
				t.Fatalf("two claims granted: attempts %d and %d, tokens %q and %q", winner.Attempt, c.Attempt, winner.Token, c.Token)
			}
			winner = c
		}
	}
	if winner == nil {
		t.Fatalf("no claim granted of %d", n)
	}
	for _, c := range claims {
		if c != winner {
			MustEqualClaim(t, c, inProgress(winner))
		}
	}
	return winner
}
