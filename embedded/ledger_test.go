package embedded

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/storetest"
)

// count returns the number of keys in each ledger bucket.
func countLedger(t *testing.T, s *Store) (records, expiries int) {
	t.Helper()
	err := s.db.View(func(tx kvTx) error {
		records = keyCount(tx.Bucket(bucketLedger))
		expiries = keyCount(tx.Bucket(bucketLedgerExpiry))
		return nil
	})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	return records, expiries
}

// TestLedgerSweep lets many keys expire and checks that later grants delete
// them, a few per grant, while keys still alive stay.
func TestLedgerSweep(t *testing.T) {
	clock := storetest.NewClock()
	s, err := Open(filepath.Join(t.TempDir(), "saver.db"), WithNow(clock.Now), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	claim := func(tenant, key string, ttl time.Duration) *saver.Claim {
		t.Helper()
		return storetest.MustClaim(t, s, saver.ClaimRequest{Tenant: tenant, Key: key, Lease: time.Minute, TTL: ttl})
	}
	const doomed, live = 100, 10
	for i := range doomed {
		c := claim("t", fmt.Sprint("doomed-", i), time.Minute)
		if i%2 == 0 {
			storetest.MustComplete(t, s, "t", c.Key, c.Token, storetest.Result("done"))
		}
	}
	var holders []*saver.Claim
	for i := range live {
		holders = append(holders, claim("t", fmt.Sprint("live-", i), 2*time.Hour))
	}
	if r, e := countLedger(t, s); r != doomed+live || e != r {
		t.Fatalf("before expiry: %d records, %d expiry entries, want %d each", r, e, doomed+live)
	}
	clock.Advance(time.Hour)
	// Each grant sweeps up to sweepPerGrant expired records.
	grants := (doomed + sweepPerGrant - 1) / sweepPerGrant
	for i := range grants {
		claim("t", fmt.Sprint("new-", i), time.Hour)
	}
	if r, e := countLedger(t, s); r != live+grants || e != r {
		t.Fatalf("after sweeping: %d records, %d expiry entries, want %d each", r, e, live+grants)
	}
	for _, h := range holders {
		storetest.MustClaimEqual(t, s, saver.ClaimRequest{Tenant: "t", Key: h.Key, Lease: time.Minute, TTL: time.Hour},
			saver.Claim{Key: h.Key, State: saver.ClaimClaimed, LeaseExpiresAt: clock.Now().Add(time.Minute), Attempt: 2})
	}
}

// TestLedgerReopen checks that the ledger is in the file: a reopened store
// answers as the first did.
func TestLedgerReopen(t *testing.T) {
	clock := storetest.NewClock()
	path := filepath.Join(t.TempDir(), "saver.db")
	open := func() *Store {
		s, err := Open(path, WithNow(clock.Now), WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	}
	s := open()
	in := storetest.NewClaim()
	c := storetest.MustClaim(t, s, in)
	storetest.MustComplete(t, s, in.Tenant, in.Key, c.Token, storetest.Result("done"))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s = open()
	defer s.Close()
	storetest.MustClaimEqual(t, s, in, saver.Claim{Key: in.Key, State: saver.ClaimCompleted, Attempt: 1, Result: new(storetest.Result("done"))})
}
