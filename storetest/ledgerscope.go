package storetest

import (
	"testing"

	"github.com/saver-dev/saver"
)

var ledgerIsolationTests = []ledgerTest{
	{"Tenants", testLedgerTenants},
	{"Keys", testLedgerKeys},
	{"Threads", testLedgerThreads},
}

// testLedgerTenants uses one key in two tenants: two records, each with its
// own holder, and a third tenant where the key is unknown.
func testLedgerTenants(t *testing.T, l LedgerStore, clock *Clock) {
	a := NewClaim()
	b := a
	b.Tenant = NewTenant()
	ca := MustClaimEqual(t, l, a, granted(a, clock.Now(), 1, nil))
	cb := MustClaimEqual(t, l, b, granted(b, clock.Now(), 1, nil))
	MustComplete(t, l, a.Tenant, a.Key, ca.Token, Result("a"))
	MustClaimEqual(t, l, b, inProgress(cb))
	MustErrorCode(t, "Complete(token of tenant a in tenant b)", l.Complete(t.Context(), b.Tenant, b.Key, ca.Token, Result("a")), saver.ECONFLICT)
	MustErrorCode(t, "Complete(in a third tenant)", l.Complete(t.Context(), NewTenant(), a.Key, ca.Token, Result("a")), saver.ENOTFOUND)
	MustFail(t, l, b.Tenant, b.Key, cb.Token, saver.ClaimError{Message: "b"})
	MustClaimEqual(t, l, a, completed(a.Key, 1, Result("a")))
	MustClaimEqual(t, l, b, failed(b.Key, 1, saver.ClaimError{Message: "b"}))
}

// testLedgerKeys claims keys that a store joining tenant and key naively
// would confuse, in one tenant: each keeps its own result.
func testLedgerKeys(t *testing.T, l LedgerStore, clock *Clock) {
	tenant := NewTenant()
	keys := append([]string{"k", "k\x00", "k\x00k", "k\x01", "kk", "k/k", "k%2Fk", "k|k", "K"}, trickyThreads...)
	for _, key := range keys {
		in := NewClaim()
		in.Tenant, in.Key = tenant, key
		c := MustClaimEqual(t, l, in, granted(in, clock.Now(), 1, nil))
		MustComplete(t, l, tenant, key, c.Token, Result(key))
	}
	for _, key := range keys {
		in := NewClaim()
		in.Tenant, in.Key = tenant, key
		MustClaimEqual(t, l, in, completed(key, 1, Result(key)))
	}
}

// testLedgerThreads gives a key the id of a thread in the same tenant:
// thread operations leave the key alone, and the key adds nothing to the
// thread.
func testLedgerThreads(t *testing.T, l LedgerStore, clock *Clock) {
	ref := NewRef()
	putThread(t, l, ref)
	before := MustListThread(t, l, ref.Tenant, ref.ThreadID)
	in := NewClaim()
	in.Tenant, in.Key = ref.Tenant, ref.ThreadID
	c := MustClaim(t, l, in)
	MustEqualTuples(t, MustListThread(t, l, ref.Tenant, ref.ThreadID), before)
	if err := l.DeleteThread(t.Context(), ref.Tenant, ref.ThreadID); err != nil {
		t.Fatalf("DeleteThread: %v", err)
	}
	MustClaimEqual(t, l, in, inProgress(c))
	MustComplete(t, l, in.Tenant, in.Key, c.Token, Result("done"))
	// A fresh run on the thread: the deleted checkpoints are tombstoned.
	fresh := NewCheckpoint(ref, "0100")
	fresh.Metadata["run_id"] = "run-0001"
	SetChannel(&fresh, "a", "0100", "a")
	MustPutCheckpoint(t, l, fresh)
	MustPutWrites(t, l, fresh.CheckpointRef, NewWrite("task", 0, "ch", "w"))
	for _, strategy := range []saver.PruneStrategy{saver.PruneKeepLatest, saver.PruneDelete} {
		if err := l.Prune(t.Context(), ref.Tenant, []string{ref.ThreadID}, strategy); err != nil {
			t.Fatalf("Prune(%s): %v", strategy, err)
		}
	}
	if err := l.DeleteForRuns(t.Context(), ref.Tenant, []string{in.Key, "run-0001"}); err != nil {
		t.Fatalf("DeleteForRuns: %v", err)
	}
	MustClaimEqual(t, l, in, completed(in.Key, 1, Result("done")))
}
