package storetest

import (
	"testing"
	"time"

	"github.com/saver-dev/saver"
)

var expiryThreadTests = []expiryTest{
	{"CopyKeepsExpiries", testExpiryCopyKeeps},
	{"CopySkipsExpired", testExpiryCopySkips},
	{"CopyExpiredSource", testExpiryCopyExpiredSource},
	{"PruneKeepsLatestLive", testExpiryPrune},
}

// copyRef returns the thread CopyThread copies src to in the thread tests.
func copyRef(src saver.CheckpointRef) saver.CheckpointRef {
	src.ThreadID += "-copy"
	return src
}

// mustCopy copies src's thread to dst's.
func mustCopy(t *testing.T, s saver.Store, src, dst saver.CheckpointRef) {
	t.Helper()
	if err := s.CopyThread(t.Context(), src.Tenant, src.ThreadID, dst.ThreadID); err != nil {
		t.Fatalf("CopyThread: %v", err)
	}
}

// putCopySource fills src with putPair (expiring in 1h and 2h) and a
// checkpoint in namespace child:1 that never expires, and returns what
// src's listing shows at t0, t0+1h and t0+2h.
func putCopySource(t *testing.T, s saver.Store, src saver.CheckpointRef, t0 time.Time) (at0, at1h, at2h []*saver.Tuple) {
	t.Helper()
	first, second := putPair(t, s, src, t0.Add(time.Hour).Unix(), t0.Add(2*time.Hour).Unix())
	in := Expiring(NewCheckpoint(InNS(src, "child:1"), "0001"), 0)
	SetChannel(&in, "c", "1", "c")
	MustPutCheckpoint(t, s, in)
	child := WantTuple(in)
	return []*saver.Tuple{second, first, child}, []*saver.Tuple{second, child}, []*saver.Tuple{child}
}

// testExpiryCopyKeeps copies a thread before anything expired: the
// copy expires as the source does, blob rule included.
func testExpiryCopyKeeps(t *testing.T, s ExpiryStore, clock *Clock) {
	t0 := clock.Now()
	src := NewRef()
	dst := copyRef(src)
	at0, at1h, at2h := putCopySource(t, s, src, t0)
	mustCopy(t, s, src, dst)
	mustShow(t, s, dst, asThread(at0, dst.ThreadID)...)
	advanceTo(clock, t0.Add(time.Hour))
	mustShow(t, s, dst, asThread(at1h, dst.ThreadID)...)
	advanceTo(clock, t0.Add(2*time.Hour))
	mustShow(t, s, dst, asThread(at2h, dst.ThreadID)...)
}

// testExpiryCopySkips copies a thread once its first checkpoint expired:
// the rest is copied, with its expiries, and resolves the expired one's
// blobs as the source does.
func testExpiryCopySkips(t *testing.T, s ExpiryStore, clock *Clock) {
	t0 := clock.Now()
	src := NewRef()
	dst := copyRef(src)
	_, at1h, at2h := putCopySource(t, s, src, t0)
	advanceTo(clock, t0.Add(time.Hour))
	mustCopy(t, s, src, dst)
	mustShow(t, s, dst, asThread(at1h, dst.ThreadID)...)
	MustNotFind(t, s, At(dst, "0001"))
	advanceTo(clock, t0.Add(2*time.Hour))
	mustShow(t, s, dst, asThread(at2h, dst.ThreadID)...)
}

// testExpiryCopyExpiredSource copies a thread whose checkpoints have all
// expired, though writes on them have not: ENOTFOUND, and nothing is copied.
func testExpiryCopyExpiredSource(t *testing.T, s ExpiryStore, clock *Clock) {
	src := NewRef()
	dst := copyRef(src)
	in := Expiring(NewCheckpoint(src, "0001"), clock.Now().Add(time.Hour).Unix())
	SetChannel(&in, "a", "1", "a")
	MustPutCheckpoint(t, s, in)
	MustPutExpiringWrites(t, s, in.CheckpointRef, 0, NewWrite("task", 0, "ch", "w"))
	clock.Advance(time.Hour)
	err := s.CopyThread(t.Context(), src.Tenant, src.ThreadID, dst.ThreadID)
	MustErrorCode(t, "CopyThread(expired source)", err, saver.ENOTFOUND)
	mustBeEmpty(t, s, dst)
	put := Expiring(stripped(NewCheckpoint(dst, "0001")), 0)
	put.ChannelVersions["a"] = "1"
	MustPutCheckpoint(t, s, put)
	mustShow(t, s, dst, WantTuple(put))
}

// testExpiryPrune prunes to the latest checkpoint once the newest has
// expired: the newest live one is kept, with its blobs and writes, and a
// namespace with nothing live keeps nothing.
func testExpiryPrune(t *testing.T, s ExpiryStore, clock *Clock) {
	t0 := clock.Now()
	ref := NewRef()
	first, _ := putPair(t, s, ref, 0, t0.Add(time.Hour).Unix())
	child := Expiring(NewCheckpoint(InNS(ref, "child:1"), "0003"), t0.Add(time.Hour).Unix())
	MustPutCheckpoint(t, s, child)
	clock.Advance(time.Hour)
	if err := s.Prune(t.Context(), ref.Tenant, []string{ref.ThreadID}, saver.PruneKeepLatest); err != nil {
		t.Fatalf("Prune: %v", err)
	}
	mustShow(t, s, ref, first)
	clock.Advance(forever)
	mustShow(t, s, ref, first)
	MustNotFind(t, s, InNS(ref, "child:1"))
}
