package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver"
)

// RunHeadGuard runs the contract of conditional puts against the store that
// open returns, on the terms of Run: open is called once per subtest,
// possibly from parallel subtests, and may return the same store every time.
// The store must honour PutCheckpoint.ExpectHead. Expired heads
// are checkpoints put with an expiry an hour before the real time, so the
// store's clock must be the real one.
//
// The contract: a put with ExpectHead applies only if the newest live
// checkpoint of its namespace (the one GetTuple returns as the latest) has
// that id, "" meaning none; otherwise it returns ECONFLICT and nothing of it
// is stored, neither its checkpoint nor its blobs. Namespaces have heads of
// their own. Puts without ExpectHead move the head as they always do, and
// conditional puts see it.
func RunHeadGuard(t *testing.T, open func(t *testing.T) saver.Store) {
	tests := []test{
		{"EmptyNamespace", testHeadEmptyNamespace},
		{"ConflictWritesNothing", testHeadConflictWritesNothing},
		{"Chain", testHeadChain},
		{"Namespaces", testHeadNamespaces},
		{"ExpiredHead", testHeadExpired},
		{"ExpiredHeadFallsBack", testHeadExpiredFallsBack},
		{"Upsert", testHeadUpsert},
		{"OlderID", testHeadOlderID},
		{"UnconditionalPuts", testHeadUnconditionalPuts},
		{"DeletedHead", testHeadDeleted},
		{"ConcurrentWriters", testHeadConcurrentWriters},
		{"ConflictMessage", testHeadConflictMessage},
	}
	runStoreTests(t, tests, open)
}

// ExpectingHead returns in conditioned on its namespace's head being head
// ("" for none).
func ExpectingHead(in saver.PutCheckpoint, head string) saver.PutCheckpoint {
	in.ExpectHead = &head
	return in
}

// MustConflict validates in, as the API does, and fails unless putting it
// returns ECONFLICT.
func MustConflict(tb testing.TB, s saver.Store, in saver.PutCheckpoint) {
	tb.Helper()
	if err := in.Validate(); err != nil {
		tb.Fatalf("Validate(%s): %v", in.ID, err)
	}
	err := s.PutCheckpoint(tb.Context(), in)
	if got, want := saver.ErrorCode(err), saver.ECONFLICT; got != want {
		tb.Fatalf("PutCheckpoint(%s) error code = %q (err %v), want %q", in.ID, got, err, want)
	}
}

// Head returns the id of the latest checkpoint of ref's namespace, "" if
// there is none.
func Head(ctx context.Context, s saver.Store, ref saver.CheckpointRef) (string, error) {
	ref.ID = ""
	tup, err := s.GetTuple(ctx, ref)
	switch {
	case saver.ErrorCode(err) == saver.ENOTFOUND:
		return "", nil
	case err != nil:
		return "", err
	}
	return tup.ID, nil
}

// mustHead fails unless the head of ref's namespace is want.
func mustHead(t *testing.T, s saver.Store, ref saver.CheckpointRef, want string) {
	t.Helper()
	got, err := Head(t.Context(), s, ref)
	if err != nil {
		t.Fatalf("head of namespace %q: %v", ref.NS, err)
	}
	if got != want {
		t.Fatalf("head of namespace %q = %q, want %q", ref.NS, got, want)
	}
}

// child returns a put of checkpoint id following parent.
func child(ref saver.CheckpointRef, id, parent string) saver.PutCheckpoint {
	in := NewCheckpoint(ref, id)
	in.ParentID = parent
	return in
}

// testHeadEmptyNamespace: "" is the head of a namespace with no checkpoint,
// and only of one.
func testHeadEmptyNamespace(t *testing.T, s saver.Store) {
	ref := NewRef()
	MustPutCheckpoint(t, s, ExpectingHead(NewCheckpoint(ref, "0001"), ""))
	mustHead(t, s, ref, "0001")
	MustConflict(t, s, ExpectingHead(NewCheckpoint(ref, "0002"), ""))
	MustNotFind(t, s, At(ref, "0002"))
	mustHead(t, s, ref, "0001")
}

// testHeadConflictWritesNothing checks that a refused put leaves no trace:
// not its checkpoint, and not the blob it brought, which a later checkpoint
// referencing that channel version must not find.
func testHeadConflictWritesNothing(t *testing.T, s saver.Store) {
	ref := NewRef()
	first := NewCheckpoint(ref, "0001")
	SetChannel(&first, "x", "1", "x of 0001")
	MustPutCheckpoint(t, s, ExpectingHead(first, ""))

	lost := child(ref, "0002", "")
	lost.ChannelVersions["x"] = "1"
	SetChannel(&lost, "y", "2", "y of the refused put")
	MustConflict(t, s, ExpectingHead(lost, ""))
	MustNotFind(t, s, At(ref, "0002"))

	next := child(ref, "0003", "0001")
	next.ChannelVersions = map[string]string{"x": "1", "y": "2"}
	MustPutCheckpoint(t, s, ExpectingHead(next, "0001"))
	if diff := cmp.Diff(map[string]string{"x": "x of 0001"}, Values(MustGetTuple(t, s, At(ref, "0003")))); diff != "" {
		t.Fatalf("values of 0003 mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"0003", "0001"}, IDs(MustListThread(t, s, ref.Tenant, ref.ThreadID))); diff != "" {
		t.Fatalf("thread mismatch (-want +got):\n%s", diff)
	}
}

// testHeadChain: the current head is accepted, a stale one refused.
func testHeadChain(t *testing.T, s saver.Store) {
	ref := NewRef()
	MustPutCheckpoint(t, s, ExpectingHead(child(ref, "0001", ""), ""))
	MustPutCheckpoint(t, s, ExpectingHead(child(ref, "0002", "0001"), "0001"))
	MustConflict(t, s, ExpectingHead(child(ref, "0003", "0001"), "0001"))
	MustNotFind(t, s, At(ref, "0003"))
	MustConflict(t, s, ExpectingHead(child(ref, "0003", "0002"), "0003"))
	MustPutCheckpoint(t, s, ExpectingHead(child(ref, "0003", "0002"), "0002"))
	mustHead(t, s, ref, "0003")
	if diff := cmp.Diff([]string{"0003", "0002", "0001"}, IDs(MustListThread(t, s, ref.Tenant, ref.ThreadID))); diff != "" {
		t.Fatalf("thread mismatch (-want +got):\n%s", diff)
	}
}

// testHeadNamespaces: each namespace of a thread has its own head.
func testHeadNamespaces(t *testing.T, s saver.Store) {
	root := NewRef()
	sub := InNS(root, "child:1")
	MustPutCheckpoint(t, s, ExpectingHead(NewCheckpoint(root, "0001"), ""))
	MustPutCheckpoint(t, s, ExpectingHead(NewCheckpoint(sub, "0002"), ""))
	MustConflict(t, s, ExpectingHead(NewCheckpoint(root, "0003"), ""))
	MustConflict(t, s, ExpectingHead(NewCheckpoint(sub, "0004"), "0001"))
	MustConflict(t, s, ExpectingHead(NewCheckpoint(root, "0003"), "0002"))
	MustPutCheckpoint(t, s, ExpectingHead(NewCheckpoint(root, "0003"), "0001"))
	MustPutCheckpoint(t, s, ExpectingHead(NewCheckpoint(sub, "0004"), "0002"))
	mustHead(t, s, root, "0003")
	mustHead(t, s, sub, "0004")
}

// expiredAt is an expiry an hour past, by the real clock.
func expiredAt() int64 { return time.Now().Add(-time.Hour).Unix() }

// testHeadExpired: an expired checkpoint is no head, even the one the last
// conditional put wrote.
func testHeadExpired(t *testing.T, s saver.Store) {
	ref := NewRef()
	MustPutCheckpoint(t, s, ExpectingHead(Expiring(NewCheckpoint(ref, "0001"), expiredAt()), ""))
	mustHead(t, s, ref, "")
	MustConflict(t, s, ExpectingHead(child(ref, "0002", "0001"), "0001"))
	MustPutCheckpoint(t, s, ExpectingHead(NewCheckpoint(ref, "0002"), ""))
	mustHead(t, s, ref, "0002")
}

// testHeadExpiredFallsBack: when the newest checkpoint has expired, the
// newest live one is the head.
func testHeadExpiredFallsBack(t *testing.T, s saver.Store) {
	ref := NewRef()
	MustPutCheckpoint(t, s, ExpectingHead(child(ref, "0001", ""), ""))
	MustPutCheckpoint(t, s, ExpectingHead(Expiring(child(ref, "0002", "0001"), expiredAt()), "0001"))
	mustHead(t, s, ref, "0001")
	MustConflict(t, s, ExpectingHead(child(ref, "0003", "0002"), "0002"))
	MustConflict(t, s, ExpectingHead(child(ref, "0003", ""), ""))
	MustPutCheckpoint(t, s, ExpectingHead(child(ref, "0003", "0001"), "0001"))
	mustHead(t, s, ref, "0003")
}

// testHeadUpsert: putting the head again, conditioned on itself, replaces it.
func testHeadUpsert(t *testing.T, s saver.Store) {
	ref := NewRef()
	MustPutCheckpoint(t, s, ExpectingHead(NewCheckpoint(ref, "0001"), ""))
	again := NewCheckpoint(ref, "0001")
	again.Body = Typed("checkpoint 0001, put again")
	again.Metadata["step"] = int64(1)
	SetChannel(&again, "x", "1", "x")
	MustPutCheckpoint(t, s, ExpectingHead(again, "0001"))
	MustEqualTuple(t, MustGetTuple(t, s, ref), WantTuple(again))
	MustPutCheckpoint(t, s, ExpectingHead(child(ref, "0002", "0001"), "0001"))
	mustHead(t, s, ref, "0002")
}

// testHeadOlderID: a put under the head's id order leaves the head where it
// is, as an unconditional one does.
func testHeadOlderID(t *testing.T, s saver.Store) {
	ref := NewRef()
	MustPutCheckpoint(t, s, ExpectingHead(NewCheckpoint(ref, "0002"), ""))
	MustPutCheckpoint(t, s, ExpectingHead(NewCheckpoint(ref, "0001"), "0002"))
	mustHead(t, s, ref, "0002")
	MustConflict(t, s, ExpectingHead(NewCheckpoint(ref, "0003"), "0001"))
	MustPutCheckpoint(t, s, ExpectingHead(NewCheckpoint(ref, "0003"), "0002"))
	mustHead(t, s, ref, "0003")
}

// testHeadUnconditionalPuts: puts without a condition move the head as
// always, and the next conditional put sees it, with or without blobs.
func testHeadUnconditionalPuts(t *testing.T, s saver.Store) {
	ref := NewRef()
	MustPutCheckpoint(t, s, ExpectingHead(child(ref, "0001", ""), ""))
	MustPutCheckpoint(t, s, child(ref, "0002", "0001"))
	MustConflict(t, s, ExpectingHead(child(ref, "0003", "0001"), "0001"))
	MustPutCheckpoint(t, s, ExpectingHead(child(ref, "0003", "0002"), "0002"))
	withBlob := child(ref, "0004", "0003")
	SetChannel(&withBlob, "x", "4", "x")
	MustPutCheckpoint(t, s, withBlob)
	MustConflict(t, s, ExpectingHead(child(ref, "0005", "0003"), "0003"))
	MustPutCheckpoint(t, s, ExpectingHead(child(ref, "0005", "0004"), "0004"))
	mustHead(t, s, ref, "0005")
}

// testHeadDeleted: deleting the head's run makes its parent the head again;
// deleting the thread empties every namespace.
func testHeadDeleted(t *testing.T, s saver.Store) {
	ref := NewRef()
	first, second := child(ref, "0001", ""), child(ref, "0002", "0001")
	first.Metadata["run_id"], second.Metadata["run_id"] = "run-1", "run-2"
	MustPutCheckpoint(t, s, ExpectingHead(first, ""))
	MustPutCheckpoint(t, s, ExpectingHead(second, "0001"))
	if err := s.DeleteForRuns(t.Context(), ref.Tenant, []string{"run-2"}); err != nil {
		t.Fatalf("DeleteForRuns: %v", err)
	}
	// A child of the deleted head is refused for its parent, on the head
	// it now has.
	putGone(t, s, ExpectingHead(child(ref, "0003", "0002"), "0001"))
	MustConflict(t, s, ExpectingHead(child(ref, "0003", "0001"), "0002"))
	MustPutCheckpoint(t, s, ExpectingHead(child(ref, "0003", "0001"), "0001"))
	if err := s.DeleteThread(t.Context(), ref.Tenant, ref.ThreadID); err != nil {
		t.Fatalf("DeleteThread: %v", err)
	}
	putGone(t, s, ExpectingHead(child(ref, "0004", "0003"), ""))
	MustConflict(t, s, ExpectingHead(child(ref, "0004", ""), "0003"))
	MustPutCheckpoint(t, s, ExpectingHead(child(ref, "0004", ""), ""))
	mustHead(t, s, ref, "0004")
}

// testHeadConcurrentWriters runs rounds of 16 writers on one thread, each of
// which reads the head, waits until all have read it, then puts a child of
// it conditioned on it, with a blob of its own channel: one writer a round
// wins, the others get ECONFLICT, the thread stays one line of the winners,
// and no loser's blob is stored.
func testHeadConcurrentWriters(t *testing.T, s saver.Store) {
	const writers, rounds = 16, 4
	ref := NewRef()
	var (
		winners []string // oldest first
		won     []int    // the winner of each round
	)
	for r := range rounds {
		var (
			wg, read sync.WaitGroup
			errs     [writers]error
		)
		read.Add(writers)
		for w := range writers {
			wg.Go(func() {
				head, err := Head(t.Context(), s, ref)
				read.Done()
				read.Wait()
				if err != nil {
					errs[w] = err
					return
				}
				in := child(ref, fmt.Sprintf("%04d-%02d", r, w), head)
				SetChannel(&in, writerChannel(w), fmt.Sprint(r), "written by "+in.ID)
				errs[w] = s.PutCheckpoint(t.Context(), ExpectingHead(in, head))
			})
		}
		wg.Wait()
		winner := -1
		for w, err := range errs {
			switch code := saver.ErrorCode(err); {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: writers %d and %d both won", r, winner, w)
			case err == nil:
				winner = w
			case code != saver.ECONFLICT:
				t.Fatalf("round %d, writer %d: error code %q (err %v), want %q", r, w, code, err, saver.ECONFLICT)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no writer won", r)
		}
		winners, won = append(winners, fmt.Sprintf("%04d-%02d", r, winner)), append(won, winner)
	}
	tuples := MustListThread(t, s, ref.Tenant, ref.ThreadID)
	if len(tuples) != rounds {
		t.Fatalf("thread holds %v, want the %d winners %v", IDs(tuples), rounds, winners)
	}
	for i, tup := range tuples {
		k := rounds - 1 - i
		parent := ""
		if k > 0 {
			parent = winners[k-1]
		}
		if tup.ID != winners[k] || tup.ParentID != parent {
			t.Fatalf("position %d: %s with parent %q, want %s with parent %q", i, tup.ID, tup.ParentID, winners[k], parent)
		}
		if diff := cmp.Diff(map[string]string{writerChannel(won[k]): "written by " + tup.ID}, Values(tup)); diff != "" {
			t.Fatalf("values of %s mismatch (-want +got):\n%s", tup.ID, diff)
		}
	}
	// A checkpoint referencing every writer's channel at a round's version
	// finds the winner's blob alone.
	for r := range rounds {
		probe := NewCheckpoint(ref, fmt.Sprintf("9999-%04d", r))
		for w := range writers {
			probe.ChannelVersions[writerChannel(w)] = fmt.Sprint(r)
		}
		MustPutCheckpoint(t, s, probe)
		want := map[string]string{writerChannel(won[r]): "written by " + winners[r]}
		if diff := cmp.Diff(want, Values(MustGetTuple(t, s, probe.CheckpointRef))); diff != "" {
			t.Fatalf("blobs of round %d mismatch (-want +got):\n%s", r, diff)
		}
	}
}

// writerChannel is the channel writer w of testHeadConcurrentWriters brings.
func writerChannel(w int) string { return fmt.Sprintf("w%02d", w) }

// testHeadConflictMessage checks that a refused put says which head it
// found and which it expected, in the root's words.
func testHeadConflictMessage(t *testing.T, s saver.Store) {
	ref := NewRef()
	MustPutCheckpoint(t, s, NewCheckpoint(ref, "0001"))
	for _, expected := range []string{"", "0000"} {
		err := s.PutCheckpoint(t.Context(), ExpectingHead(child(ref, "0002", "0001"), expected))
		MustError(t, "PutCheckpoint(expecting "+expected+")", err, saver.HeadMoved(ref.ThreadID, ref.NS, "0001", expected))
	}
	empty := InNS(ref, "child:1")
	err := s.PutCheckpoint(t.Context(), ExpectingHead(child(empty, "0002", ""), "0001"))
	MustError(t, "PutCheckpoint(in an empty namespace)", err, saver.HeadMoved(ref.ThreadID, empty.NS, "", "0001"))
	MustNotFind(t, s, At(ref, "0002"))
	MustNotFind(t, s, At(empty, "0002"))
}
