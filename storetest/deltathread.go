package storetest

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver"
)

// deltaThreadTests check that maintenance never leaves a kept checkpoint
// unable to rebuild its DeltaChannels.
var deltaThreadTests = []test{
	{"PruneKeepsTheChain", testDeltaPruneKeepsTheChain},
	{"PruneWithoutSnapshot", testDeltaPruneWithoutSnapshot},
	{"PruneSeveralChannels", testDeltaPruneSeveralChannels},
	{"PruneNamespaces", testDeltaPruneNamespaces},
	{"PruneEphemeralChannels", testDeltaPruneEphemeralChannels},
	{"DeleteForRunsSevering", testDeltaDeleteForRunsSevering},
	{"DeleteForRunsSafe", testDeltaDeleteForRunsSafe},
	{"CopyThread", testDeltaCopyThread},
}

// putRunChat is PutChat with the run_id of each checkpoint from runs
// (checkpoint i+1 gets runs[i]).
func putRunChat(t *testing.T, s saver.Store, ref saver.CheckpointRef, runs []string, snapshots ...int) {
	t.Helper()
	snap := map[int]bool{}
	for _, i := range snapshots {
		snap[i] = true
	}
	parent := ""
	for i := 1; i <= len(runs); i++ {
		id := fmt.Sprintf("%04d", i)
		in := NewCheckpoint(ref, id)
		in.ParentID = parent
		in.Metadata["run_id"] = runs[i-1]
		value := saver.Typed{Type: saver.EmptyType, Data: []byte{}}
		if snap[i] {
			value = Typed(fmt.Sprint("S", i))
		} else {
			in.Metadata[saver.DeltaCountersKey] = map[string]any{"messages": []any{int64(1), int64(1)}}
		}
		in.ChannelVersions["messages"] = fmt.Sprint(i)
		in.Blobs = []saver.Blob{{Channel: "messages", Version: fmt.Sprint(i), Value: value}}
		MustPutCheckpoint(t, s, in)
		MustPutWrites(t, s, At(ref, id), DeltaWrite("task", "messages", fmt.Sprint("m", i)))
		parent = id
	}
}

// mustPrune prunes ref's thread to its latest checkpoints.
func mustPrune(t *testing.T, s saver.Store, ref saver.CheckpointRef) {
	t.Helper()
	if err := s.Prune(t.Context(), ref.Tenant, []string{ref.ThreadID}, saver.PruneKeepLatest); err != nil {
		t.Fatalf("Prune: %v", err)
	}
}

// testDeltaPruneKeepsTheChain keeps the latest checkpoint's ancestors back
// to the snapshot, with their writes, and drops what lies beyond it.
func testDeltaPruneKeepsTheChain(t *testing.T, s saver.Store) {
	ref := NewRef()
	PutChat(t, s, ref, 9, 1, 5)
	want := map[string]History{"messages": seeded("S5", ChatWrites(5, 8)...)}
	MustEqualHistory(t, s, ref, want)
	latest := MustGetTuple(t, s, ref)
	mustPrune(t, s, ref)
	MustEqualHistory(t, s, ref, want)
	MustEqualTuple(t, MustGetTuple(t, s, ref), latest)
	if got, want := IDs(MustListThread(t, s, ref.Tenant, ref.ThreadID)), []string{"0009", "0008", "0007", "0006", "0005"}; !cmp.Equal(got, want) {
		t.Fatalf("kept %v, want %v", got, want)
	}
	for _, id := range []string{"0001", "0004"} {
		MustNotFind(t, s, At(ref, id))
	}
	// The next step's history is whole too, and a second prune keeps it.
	PutDelta(t, s, ref, "0010", "0009", []string{"messages=10:"}, "messages")
	mustPrune(t, s, ref)
	MustEqualHistory(t, s, ref, map[string]History{"messages": seeded("S5", ChatWrites(5, 9)...)})
}

// testDeltaPruneWithoutSnapshot keeps the whole chain of a thread that has
// no snapshot yet: its history reaches the root.
func testDeltaPruneWithoutSnapshot(t *testing.T, s saver.Store) {
	ref := NewRef()
	PutChat(t, s, ref, 6)
	// A fork off the chain: not an ancestor of the latest, so dropped.
	PutDelta(t, s, ref, "0003a", "0002", []string{"messages=3a:"}, "messages")
	PutDelta(t, s, ref, "0007", "0006", []string{"messages=7:"}, "messages")
	want := map[string]History{"messages": unseeded(ChatWrites(1, 6)...)}
	mustPrune(t, s, ref)
	MustEqualHistory(t, s, ref, want)
	MustNotFind(t, s, At(ref, "0003a"))
	if got := len(MustListThread(t, s, ref.Tenant, ref.ThreadID)); got != 7 {
		t.Fatalf("kept %d checkpoints, want 7", got)
	}
}

// testDeltaPruneSeveralChannels keeps ancestors back to the farthest of the
// channels' snapshots.
func testDeltaPruneSeveralChannels(t *testing.T, s saver.Store) {
	ref := NewRef()
	PutDelta(t, s, ref, "0001", "", []string{"a=1:A1", "b=1:B1"})
	MustPutWrites(t, s, At(ref, "0001"), DeltaWrite("t", "a", "a1"), saver.Write{TaskID: "t", Idx: 1, Channel: "b", Value: Typed("b1")})
	PutDelta(t, s, ref, "0002", "0001", []string{"a=2:", "b=2:"}, "a", "b")
	MustPutWrites(t, s, At(ref, "0002"), DeltaWrite("t", "a", "a2"), saver.Write{TaskID: "t", Idx: 1, Channel: "b", Value: Typed("b2")})
	PutDelta(t, s, ref, "0003", "0002", []string{"a=3:A3", "b=3:"}, "b")
	MustPutWrites(t, s, At(ref, "0003"), DeltaWrite("t", "a", "a3"), saver.Write{TaskID: "t", Idx: 1, Channel: "b", Value: Typed("b3")})
	PutDelta(t, s, ref, "0004", "0003", []string{"a=4:", "b=4:"}, "a", "b")
	want := map[string]History{"a": seeded("A3", "t/0/a=a3"), "b": seeded("B1", "t/1/b=b1", "t/1/b=b2", "t/1/b=b3")}
	MustEqualHistory(t, s, ref, want)
	mustPrune(t, s, ref)
	MustEqualHistory(t, s, ref, want)
	if got := len(MustListThread(t, s, ref.Tenant, ref.ThreadID)); got != 4 {
		t.Fatalf("kept %d checkpoints, want all 4 (b's snapshot is the root)", got)
	}
}

// testDeltaPruneNamespaces keeps each namespace's chain.
func testDeltaPruneNamespaces(t *testing.T, s saver.Store) {
	ref := NewRef()
	sub := InNS(ref, "sub:1")
	PutChat(t, s, ref, 5, 2)
	PutChat(t, s, sub, 4, 1)
	mustPrune(t, s, ref)
	MustEqualHistory(t, s, ref, map[string]History{"messages": seeded("S2", ChatWrites(2, 4)...)})
	MustEqualHistory(t, s, sub, map[string]History{"messages": seeded("S1", ChatWrites(1, 3)...)})
	MustNotFind(t, s, At(ref, "0001"))
}

// testDeltaPruneEphemeralChannels keeps only the latest checkpoint when no
// DeltaChannel needs a chain, however many channels have empty values
// (LangGraph's trigger channels do at most steps).
func testDeltaPruneEphemeralChannels(t *testing.T, s saver.Store) {
	ref := NewRef()
	PutDelta(t, s, ref, "0001", "", []string{"branch:to:chat=1:", "messages=1:S1"})
	PutDelta(t, s, ref, "0002", "0001", []string{"branch:to:chat=2:", "messages=1"})
	// A snapshot at the latest: it needs nothing before it.
	PutDelta(t, s, ref, "0003", "0002", []string{"branch:to:chat=3:", "messages=3:S3"})
	mustPrune(t, s, ref)
	if got, want := IDs(MustListThread(t, s, ref.Tenant, ref.ThreadID)), []string{"0003"}; !cmp.Equal(got, want) {
		t.Fatalf("kept %v, want %v", got, want)
	}
}

// testDeltaDeleteForRunsSevering refuses to delete a run whose checkpoints
// a later run's checkpoint needs, and deletes nothing then.
func testDeltaDeleteForRunsSevering(t *testing.T, s saver.Store) {
	ref := NewRef()
	putRunChat(t, s, ref, []string{"r1", "r1", "r1", "r2", "r2"}, 1)
	before := MustListThread(t, s, ref.Tenant, ref.ThreadID)
	err := s.DeleteForRuns(t.Context(), ref.Tenant, []string{"r1"})
	if got, want := saver.ErrorCode(err), saver.ECONFLICT; got != want {
		t.Fatalf("DeleteForRuns(r1) = %v (code %q), want code %q", err, got, want)
	}
	MustEqualTuples(t, MustListThread(t, s, ref.Tenant, ref.ThreadID), before)
	// Deleting both runs, or the later one alone, leaves nothing severed.
	if err := s.DeleteForRuns(t.Context(), ref.Tenant, []string{"r2"}); err != nil {
		t.Fatalf("DeleteForRuns(r2): %v", err)
	}
	MustEqualHistory(t, s, ref, map[string]History{"messages": seeded("S1", ChatWrites(1, 2)...)})
	if err := s.DeleteForRuns(t.Context(), ref.Tenant, []string{"r1"}); err != nil {
		t.Fatalf("DeleteForRuns(r1) after r2: %v", err)
	}
	if got := MustListThread(t, s, ref.Tenant, ref.ThreadID); len(got) != 0 {
		t.Fatalf("left %v", IDs(got))
	}
}

// testDeltaDeleteForRunsSafe deletes a run whose checkpoints no staying
// checkpoint needs: those past the later run's own snapshot.
func testDeltaDeleteForRunsSafe(t *testing.T, s saver.Store) {
	ref := NewRef()
	putRunChat(t, s, ref, []string{"r1", "r1", "r2", "r2", "r2"}, 1, 3)
	if err := s.DeleteForRuns(t.Context(), ref.Tenant, []string{"r1"}); err != nil {
		t.Fatalf("DeleteForRuns(r1): %v", err)
	}
	MustEqualHistory(t, s, ref, map[string]History{"messages": seeded("S3", ChatWrites(3, 4)...)})
	if got, want := IDs(MustListThread(t, s, ref.Tenant, ref.ThreadID)), []string{"0005", "0004", "0003"}; !cmp.Equal(got, want) {
		t.Fatalf("left %v, want %v", got, want)
	}
}

// testDeltaCopyThread copies the whole chain: the copy's histories are the
// source's.
func testDeltaCopyThread(t *testing.T, s saver.Store) {
	src := NewRef()
	PutChat(t, s, src, 7, 3)
	PutChat(t, s, InNS(src, "sub:1"), 3)
	dst := src
	dst.ThreadID += "-copy"
	if err := s.CopyThread(t.Context(), src.Tenant, src.ThreadID, dst.ThreadID); err != nil {
		t.Fatalf("CopyThread: %v", err)
	}
	for _, ns := range []string{"", "sub:1"} {
		for _, id := range []string{"", "0003", "0002"} {
			want := Histories(MustDeltaHistory(t, s, At(InNS(src, ns), id), "messages"))
			MustEqualHistory(t, s, At(InNS(dst, ns), id), want)
		}
	}
}
