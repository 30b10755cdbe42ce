package storetest

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver"
)

// threadData is what putThread stored: the checkpoint puts, and the writes
// stored against checkpoints that were never put.
type threadData struct {
	puts    []saver.PutCheckpoint
	orphans []saver.CheckpointRef
}

// putThread fills ref's thread with three root checkpoints sharing a blob,
// one checkpoint in namespace "child:1", writes on each, and writes on
// checkpoints that do not exist (one in a namespace with no checkpoint).
func putThread(t *testing.T, s saver.Store, ref saver.CheckpointRef) threadData {
	t.Helper()
	var d threadData
	for i, id := range []string{"0001", "0002", "0003"} {
		in := NewCheckpoint(ref, id)
		if i > 0 {
			in.ParentID = d.puts[i-1].ID
		}
		in.Metadata["step"] = int64(i)
		in.Metadata["run_id"] = "run-" + id
		SetChannel(&in, "a", id, "a at "+id)
		if i == 0 {
			SetChannel(&in, "b", "1", "b")
		} else {
			in.ChannelVersions["b"] = "1"
		}
		d.puts = append(d.puts, in)
	}
	child := NewCheckpoint(InNS(ref, "child:1"), "0002")
	child.Metadata["run_id"] = "run-0002"
	SetChannel(&child, "c", "1", "c")
	d.puts = append(d.puts, child)
	for _, in := range d.puts {
		MustPutCheckpoint(t, s, in)
		MustPutWrites(t, s, in.CheckpointRef,
			NewWrite("task", 0, "ch", "on "+in.NS+"/"+in.ID),
			NewWrite("task", -1, "__error__", "error on "+in.NS+"/"+in.ID))
	}
	d.orphans = []saver.CheckpointRef{At(ref, "0000"), At(InNS(ref, "writes-only"), "0001")}
	for _, o := range d.orphans {
		MustPutWrites(t, s, o, NewWrite("task", 0, "ch", "orphan"))
	}
	return d
}

// stripped returns in without blobs: re-putting it shows which of its
// values are still stored.
func stripped(in saver.PutCheckpoint) saver.PutCheckpoint {
	in.Blobs = nil
	in.ChannelVersions = maps.Clone(in.ChannelVersions)
	return in
}

// mustBeGone checks that nothing of a thread is left: no checkpoint; the
// deleted checkpoints tombstoned (a put of one, or writes against it, are
// refused); no value, which fresh checkpoints referencing the same
// versions show; and no write on the orphans' checkpoints, once put.
func mustBeGone(t *testing.T, s saver.Store, ref saver.CheckpointRef, d threadData) {
	t.Helper()
	if got := MustListThread(t, s, ref.Tenant, ref.ThreadID); len(got) != 0 {
		t.Fatalf("thread %s still lists %v", ref.ThreadID, Positions(got))
	}
	for _, in := range d.puts {
		MustNotFind(t, s, in.CheckpointRef)
		MustNotFind(t, s, InNS(ref, in.NS))
	}
	for _, in := range d.puts {
		putGone(t, s, stripped(in))
		writesGone(t, s, in.CheckpointRef)
		fresh := stripped(in)
		fresh.ID, fresh.ParentID = "fresh-"+in.ID, ""
		MustPutCheckpoint(t, s, fresh)
		if tup := MustGetTuple(t, s, fresh.CheckpointRef); len(tup.Values) != 0 {
			t.Fatalf("%s/%s's values came back: %v", in.NS, in.ID, Values(tup))
		}
	}
	for _, o := range d.orphans {
		MustPutCheckpoint(t, s, NewCheckpoint(o, o.ID))
		if tup := MustGetTuple(t, s, o); len(tup.Writes) != 0 {
			t.Fatalf("writes on %s/%s came back: %v", o.NS, o.ID, WriteValues(tup))
		}
	}
}

// neighbours returns threads of ref's tenant whose names are close to ref's,
// the ones a prefix scan gone wrong would reach.
func neighbours(ref saver.CheckpointRef) []saver.CheckpointRef {
	var out []saver.CheckpointRef
	for _, suffix := range []string{"x", "\x00", "\x00x", "\x01", " "} {
		n := ref
		n.ThreadID += suffix
		out = append(out, n)
	}
	n := ref
	n.ThreadID = ref.ThreadID[:len(ref.ThreadID)-1]
	return append(out, n)
}

var deleteThreadTests = []test{
	{"RemovesEverything", testDeleteThreadRemovesEverything},
	{"OtherThreadsUntouched", testDeleteThreadOtherThreadsUntouched},
	{"Missing", testDeleteThreadMissing},
}

func testDeleteThreadRemovesEverything(t *testing.T, s saver.Store) {
	ref := NewRef()
	d := putThread(t, s, ref)
	if err := s.DeleteThread(t.Context(), ref.Tenant, ref.ThreadID); err != nil {
		t.Fatalf("DeleteThread: %v", err)
	}
	mustBeGone(t, s, ref, d)
}

func testDeleteThreadOtherThreadsUntouched(t *testing.T, s saver.Store) {
	ref := NewRef()
	putThread(t, s, ref)
	others := neighbours(ref)
	before := make([][]*saver.Tuple, len(others))
	for i, o := range others {
		putThread(t, s, o)
		before[i] = MustListThread(t, s, o.Tenant, o.ThreadID)
	}
	if err := s.DeleteThread(t.Context(), ref.Tenant, ref.ThreadID); err != nil {
		t.Fatalf("DeleteThread: %v", err)
	}
	for i, o := range others {
		MustEqualTuples(t, MustListThread(t, s, o.Tenant, o.ThreadID), before[i])
	}
}

func testDeleteThreadMissing(t *testing.T, s saver.Store) {
	ref := NewRef()
	for range 2 {
		if err := s.DeleteThread(t.Context(), ref.Tenant, ref.ThreadID); err != nil {
			t.Fatalf("DeleteThread(missing): %v", err)
		}
	}
	MustNotFind(t, s, ref)
}

var deleteForRunsTests = []test{
	{"Cases", testDeleteForRuns},
	{"RemovesWrites", testDeleteForRunsRemovesWrites},
}

func testDeleteForRuns(t *testing.T, s saver.Store) {
	// Every case runs on the same layout: a chain run1 -> run2 -> run3 in
	// thread a, run1 also in namespace child:1 and in thread b, and a
	// checkpoint with no run_id.
	type cp struct{ thread, ns, id, run string }
	layout := []cp{
		{"a", "", "0001", "run1"},
		{"a", "", "0002", "run2"},
		{"a", "", "0003", "run3"},
		{"a", "child:1", "0001", "run1"},
		{"a", "child:1", "0004", "run3"},
		{"b", "", "0001", "run1"},
		{"b", "", "0002", ""},
		{"c", "", "0001", "run10"},
	}
	tests := []struct {
		name string
		runs []string
		want []saver.ListPosition
	}{
		{"Single", []string{"run1"}, []saver.ListPosition{
			pos("a", "child:1", "0004"), pos("a", "", "0003"), pos("a", "", "0002"), pos("b", "", "0002"), pos("c", "", "0001"),
		}},
		{"MultipleNoCascade", []string{"run1", "run2"}, []saver.ListPosition{
			pos("a", "child:1", "0004"), pos("a", "", "0003"), pos("b", "", "0002"), pos("c", "", "0001"),
		}},
		{"Child", []string{"run3"}, []saver.ListPosition{
			pos("a", "", "0002"), pos("b", "", "0002"),
			pos("a", "", "0001"), pos("a", "child:1", "0001"), pos("b", "", "0001"), pos("c", "", "0001"),
		}},
		{"Empty", nil, []saver.ListPosition{
			pos("a", "child:1", "0004"), pos("a", "", "0003"), pos("a", "", "0002"), pos("b", "", "0002"),
			pos("a", "", "0001"), pos("a", "child:1", "0001"), pos("b", "", "0001"), pos("c", "", "0001"),
		}},
		{"Unknown", []string{"no-such-run", "run", ""}, []saver.ListPosition{
			pos("a", "child:1", "0004"), pos("a", "", "0003"), pos("a", "", "0002"), pos("b", "", "0002"),
			pos("a", "", "0001"), pos("a", "child:1", "0001"), pos("b", "", "0001"), pos("c", "", "0001"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tenant := NewTenant()
			for _, c := range layout {
				in := NewCheckpoint(saver.CheckpointRef{Tenant: tenant, ThreadID: c.thread, NS: c.ns}, c.id)
				if c.run != "" {
					in.Metadata["run_id"] = c.run
				}
				if c.id != "0001" {
					in.ParentID = "0001"
				}
				MustPutCheckpoint(t, s, in)
			}
			if err := s.DeleteForRuns(t.Context(), tenant, tt.runs); err != nil {
				t.Fatalf("DeleteForRuns(%q): %v", tt.runs, err)
			}
			got := Positions(MustList(t, s, saver.ListFilter{Tenant: tenant}))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("remaining checkpoints mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// testDeleteForRunsRemovesWrites checks that a deleted checkpoint's writes
// go with it, and that the remaining checkpoints keep theirs.
func testDeleteForRunsRemovesWrites(t *testing.T, s saver.Store) {
	ref := NewRef()
	d := putThread(t, s, ref)
	if err := s.DeleteForRuns(t.Context(), ref.Tenant, []string{"run-0002"}); err != nil {
		t.Fatalf("DeleteForRuns: %v", err)
	}
	var deleted, kept []saver.PutCheckpoint
	for _, in := range d.puts {
		if in.ID == "0002" {
			deleted = append(deleted, in)
			MustNotFind(t, s, in.CheckpointRef)
		} else {
			kept = append(kept, in)
		}
	}
	for _, in := range kept {
		tup := MustGetTuple(t, s, in.CheckpointRef)
		if len(tup.Writes) != 2 {
			t.Fatalf("kept checkpoint %s/%s has writes %v, want 2", in.NS, in.ID, WriteValues(tup))
		}
	}
	// The deleted stay deleted (tombstone.go); their writes are checked
	// gone once the tombstones expire (expiryTombstoneTests).
	for _, in := range deleted {
		putGone(t, s, in)
		MustNotFind(t, s, in.CheckpointRef)
	}
}

var copyThreadTests = []test{
	{"CopiesEverything", testCopyThread},
	{"ReusedBlobKey", testCopyThreadReusedBlobKey},
	{"MissingSource", testCopyThreadMissingSource},
	{"Independent", testCopyThreadIndependent},
}

// asThread returns tuples as they must look once copied to thread.
func asThread(tuples []*saver.Tuple, thread string) []*saver.Tuple {
	out := make([]*saver.Tuple, len(tuples))
	for i, tup := range tuples {
		c := *tup
		c.ThreadID = thread
		out[i] = &c
	}
	return out
}

func testCopyThread(t *testing.T, s saver.Store) {
	src := NewRef()
	d := putThread(t, s, src)
	for _, n := range neighbours(src) {
		putThread(t, s, n)
	}
	before := MustListThread(t, s, src.Tenant, src.ThreadID)
	dst := src
	dst.ThreadID += "-copy"
	if err := s.CopyThread(t.Context(), src.Tenant, src.ThreadID, dst.ThreadID); err != nil {
		t.Fatalf("CopyThread: %v", err)
	}
	MustEqualTuples(t, MustListThread(t, s, dst.Tenant, dst.ThreadID), asThread(before, dst.ThreadID))
	MustEqualTuples(t, MustListThread(t, s, src.Tenant, src.ThreadID), before)
	for _, ns := range []string{"", "child:1"} {
		MustEqualTuple(t, MustGetTuple(t, s, InNS(dst, ns)), asThread([]*saver.Tuple{MustGetTuple(t, s, InNS(src, ns))}, dst.ThreadID)[0])
	}
	// Writes on checkpoints not put yet are copied too: they show once the
	// checkpoint is put in both threads.
	for _, o := range d.orphans {
		MustPutCheckpoint(t, s, NewCheckpoint(o, o.ID))
		od := o
		od.ThreadID = dst.ThreadID
		MustPutCheckpoint(t, s, NewCheckpoint(od, o.ID))
		if got, want := WriteValues(MustGetTuple(t, s, od)), WriteValues(MustGetTuple(t, s, o)); !cmp.Equal(got, want) || len(want) == 0 {
			t.Fatalf("orphan writes in copy = %v, want %v", got, want)
		}
	}
}

// testCopyThreadReusedBlobKey follows the conformance suite, which re-puts
// one blob key with different values: the copy reads what the source reads.
func testCopyThreadReusedBlobKey(t *testing.T, s saver.Store) {
	src := NewRef()
	for i, id := range []string{"0001", "0002", "0003"} {
		in := NewCheckpoint(src, id)
		in.Metadata["step"] = int64(i)
		SetChannel(&in, "step", "1", id)
		MustPutCheckpoint(t, s, in)
	}
	dst := src
	dst.ThreadID += "-copy"
	if err := s.CopyThread(t.Context(), src.Tenant, src.ThreadID, dst.ThreadID); err != nil {
		t.Fatalf("CopyThread: %v", err)
	}
	want := asThread(MustListThread(t, s, src.Tenant, src.ThreadID), dst.ThreadID)
	MustEqualTuples(t, MustListThread(t, s, dst.Tenant, dst.ThreadID), want)
}

func testCopyThreadMissingSource(t *testing.T, s saver.Store) {
	tests := []struct {
		name  string
		setup func(src saver.CheckpointRef)
	}{
		{"Unknown", func(saver.CheckpointRef) {}},
		{"OnlyWrites", func(src saver.CheckpointRef) {
			MustPutWrites(t, s, At(src, "0001"), NewWrite("task", 0, "ch", "orphan"))
		}},
		{"Deleted", func(src saver.CheckpointRef) {
			putThread(t, s, src)
			if err := s.DeleteThread(t.Context(), src.Tenant, src.ThreadID); err != nil {
				t.Fatalf("DeleteThread: %v", err)
			}
		}},
		{"OtherTenant", func(src saver.CheckpointRef) {
			other := src
			other.Tenant = NewTenant()
			putThread(t, s, other)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := NewRef()
			tt.setup(src)
			dst := src
			dst.ThreadID += "-copy"
			err := s.CopyThread(t.Context(), src.Tenant, src.ThreadID, dst.ThreadID)
			if got, want := saver.ErrorCode(err), saver.ENOTFOUND; got != want {
				t.Fatalf("CopyThread error code = %q (%v), want %q", got, err, want)
			}
			if got := MustListThread(t, s, dst.Tenant, dst.ThreadID); len(got) != 0 {
				t.Fatalf("dst lists %v after a failed copy", Positions(got))
			}
			MustPutCheckpoint(t, s, NewCheckpoint(dst, "0001"))
			if tup := MustGetTuple(t, s, dst); len(tup.Writes) != 0 {
				t.Fatalf("dst has writes %v after a failed copy", WriteValues(tup))
			}
		})
	}
}

// testCopyThreadIndependent checks that source and copy share nothing:
// changing or deleting one leaves the other as it was.
func testCopyThreadIndependent(t *testing.T, s saver.Store) {
	src := NewRef()
	putThread(t, s, src)
	dst := src
	dst.ThreadID += "-copy"
	if err := s.CopyThread(t.Context(), src.Tenant, src.ThreadID, dst.ThreadID); err != nil {
		t.Fatalf("CopyThread: %v", err)
	}
	copied := MustListThread(t, s, dst.Tenant, dst.ThreadID)
	MustPutWrites(t, s, At(src, "0003"), NewWrite("task", 5, "ch", "later"))
	MustPutCheckpoint(t, s, NewCheckpoint(src, "0004"))
	if err := s.Prune(t.Context(), src.Tenant, []string{src.ThreadID}, saver.PruneKeepLatest); err != nil {
		t.Fatalf("Prune: %v", err)
	}
	MustEqualTuples(t, MustListThread(t, s, dst.Tenant, dst.ThreadID), copied)
	if err := s.DeleteThread(t.Context(), src.Tenant, src.ThreadID); err != nil {
		t.Fatalf("DeleteThread: %v", err)
	}
	MustEqualTuples(t, MustListThread(t, s, dst.Tenant, dst.ThreadID), copied)
}

var pruneTests = []test{
	{"KeepLatest", testPruneKeepLatest},
	{"KeepLatestFreesTheRest", testPruneKeepLatestFreesTheRest},
	{"Delete", testPruneDelete},
	{"Noop", testPruneNoop},
}

func testPruneKeepLatest(t *testing.T, s saver.Store) {
	a := NewRef()
	b := a
	b.ThreadID += "-b"
	for _, ref := range []saver.CheckpointRef{a, b} {
		putThread(t, s, ref)
	}
	var untouched [][]*saver.Tuple
	others := append(neighbours(a), NewRef())
	for _, o := range others {
		putThread(t, s, o)
		untouched = append(untouched, MustListThread(t, s, o.Tenant, o.ThreadID))
	}
	// The latest of each namespace, with its values and writes, as before.
	var want []*saver.Tuple
	for _, ref := range []saver.CheckpointRef{a, b} {
		want = append(want, MustGetTuple(t, s, ref), MustGetTuple(t, s, InNS(ref, "child:1")))
	}
	if err := s.Prune(t.Context(), a.Tenant, []string{a.ThreadID, b.ThreadID}, saver.PruneKeepLatest); err != nil {
		t.Fatalf("Prune: %v", err)
	}
	for i, ref := range []saver.CheckpointRef{a, b} {
		got := MustListThread(t, s, ref.Tenant, ref.ThreadID)
		MustEqualTuples(t, got, want[2*i:2*i+2])
		if len(got[0].Values) != 2 || len(got[0].Writes) != 2 {
			t.Fatalf("kept %s has values %v and writes %v", got[0].ID, Values(got[0]), WriteValues(got[0]))
		}
	}
	for i, o := range others {
		MustEqualTuples(t, MustListThread(t, s, o.Tenant, o.ThreadID), untouched[i])
	}
	// Pruning again changes nothing.
	if err := s.Prune(t.Context(), a.Tenant, []string{a.ThreadID}, saver.PruneKeepLatest); err != nil {
		t.Fatalf("Prune again: %v", err)
	}
	MustEqualTuples(t, MustListThread(t, s, a.Tenant, a.ThreadID), want[:2])
}

// testPruneKeepLatestFreesTheRest checks that pruning removes the writes of
// the dropped checkpoints and the blobs no kept checkpoint references.
func testPruneKeepLatestFreesTheRest(t *testing.T, s saver.Store) {
	ref := NewRef()
	d := putThread(t, s, ref)
	if err := s.Prune(t.Context(), ref.Tenant, []string{ref.ThreadID}, saver.PruneKeepLatest); err != nil {
		t.Fatalf("Prune: %v", err)
	}
	for _, id := range []string{"0001", "0002"} {
		MustNotFind(t, s, At(ref, id))
	}
	// 0001 and 0002 share blob b@1 with the kept 0003; their own a@1 and a@2
	// are gone.
	for _, in := range d.puts[:2] {
		MustPutCheckpoint(t, s, stripped(in))
		tup := MustGetTuple(t, s, in.CheckpointRef)
		if diff := cmp.Diff(map[string]string{"b": "b"}, Values(tup)); diff != "" {
			t.Errorf("values of pruned %s mismatch (-want +got):\n%s", in.ID, diff)
		}
		if len(tup.Writes) != 0 {
			t.Errorf("writes of pruned %s came back: %v", in.ID, WriteValues(tup))
		}
	}
}

func testPruneDelete(t *testing.T, s saver.Store) {
	a := NewRef()
	b := a
	b.ThreadID += "-b"
	da, db := putThread(t, s, a), putThread(t, s, b)
	other := neighbours(a)[0]
	putThread(t, s, other)
	want := MustListThread(t, s, other.Tenant, other.ThreadID)
	if err := s.Prune(t.Context(), a.Tenant, []string{a.ThreadID, b.ThreadID}, saver.PruneDelete); err != nil {
		t.Fatalf("Prune: %v", err)
	}
	mustBeGone(t, s, a, da)
	mustBeGone(t, s, b, db)
	MustEqualTuples(t, MustListThread(t, s, other.Tenant, other.ThreadID), want)
}

func testPruneNoop(t *testing.T, s saver.Store) {
	ref := NewRef()
	putThread(t, s, ref)
	want := MustListThread(t, s, ref.Tenant, ref.ThreadID)
	for _, strategy := range []saver.PruneStrategy{saver.PruneKeepLatest, saver.PruneDelete} {
		for _, ids := range [][]string{nil, {}, {"no-such-thread"}, {ref.ThreadID + "x"}} {
			if err := s.Prune(t.Context(), ref.Tenant, ids, strategy); err != nil {
				t.Fatalf("Prune(%q, %s): %v", ids, strategy, err)
			}
		}
	}
	MustEqualTuples(t, MustListThread(t, s, ref.Tenant, ref.ThreadID), want)
	// A thread whose namespaces each hold one checkpoint is already pruned.
	if err := s.Prune(t.Context(), ref.Tenant, []string{ref.ThreadID}, saver.PruneKeepLatest); err != nil {
		t.Fatalf("Prune: %v", err)
	}
	latest := slices.DeleteFunc(want, func(tup *saver.Tuple) bool { return tup.NS == "" && tup.ID != "0003" })
	MustEqualTuples(t, MustListThread(t, s, ref.Tenant, ref.ThreadID), latest)
}
