package embedded_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/embedded"
	"github.com/saver-dev/saver/storetest"
)

// TestMigrate fills a bbolt store (checkpoints, writes, a DeltaChannel
// chain, the ledger), migrates it, and reads everything back from the Pebble
// store that took its place; the file stays beside it.
func TestMigrate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "saver.db")
	s := MustOpen(t, path, embedded.WithEngine(embedded.EngineBolt))
	ref := storetest.NewRef()
	storetest.PutChat(t, s, ref, 30, 1, 20)
	claim := storetest.MustClaim(t, s, saver.ClaimRequest{Tenant: ref.Tenant, Key: "k", Lease: time.Minute, TTL: time.Hour})
	storetest.MustComplete(t, s, ref.Tenant, "k", claim.Token, storetest.Result("done"))
	wantTuples := storetest.MustListThread(t, s, ref.Tenant, ref.ThreadID)
	wantNodes := storetest.MustListNodes(t, s, ref.Tenant, ref.ThreadID)
	wantHistory := storetest.Histories(storetest.MustDeltaHistory(t, s, ref, "messages"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	n, err := embedded.Migrate(t.Context(), path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if n < 90 {
		t.Fatalf("Migrate copied %d keys, want at least 90 (30 checkpoints, 30 blobs, 30 writes)", n)
	}
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
		t.Fatalf("after Migrate the store is not a directory: %v", err)
	}
	if _, err := os.Stat(path + ".bbolt"); err != nil {
		t.Fatalf("the old file is not kept: %v", err)
	}
	m := MustOpen(t, path)
	storetest.MustEqualTuples(t, storetest.MustListThread(t, m, ref.Tenant, ref.ThreadID), wantTuples)
	storetest.MustEqualNodes(t, m, ref.Tenant, ref.ThreadID, wantNodes)
	storetest.MustEqualHistory(t, m, ref, wantHistory)
	storetest.MustClaimEqual(t, m, saver.ClaimRequest{Tenant: ref.Tenant, Key: "k", Lease: time.Minute, TTL: time.Hour},
		saver.Claim{Key: "k", State: saver.ClaimCompleted, Attempt: 1, Result: new(storetest.Result("done"))})
	// A second run finds nothing to do.
	if _, err := embedded.Migrate(t.Context(), path, slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("Migrate of a Pebble store succeeded")
	}
}
