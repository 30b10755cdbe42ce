package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/saver-dev/saver"
)

// The tombstone contract (see saver's tombstone.go): what a deletion
// removed stays removed for the tombstone lifetime, whatever late put or
// put_writes reuses a config from before it; a fresh run on the thread is
// stored.
var tombstoneTests = []test{
	{"LatePutDeletedParent", testTombstoneLatePut},
	{"LatePutWrites", testTombstoneLatePutWrites},
	{"RePutDeletedID", testTombstoneRePut},
	{"FreshRun", testTombstoneFreshRun},
	{"ParentNeverStored", testTombstoneParentNeverStored},
	{"DeleteForRuns", testTombstoneDeleteForRuns},
	{"PruneDelete", testTombstonePruneDelete},
	{"PruneKeepLatest", testTombstonePruneKeepLatest},
	{"CopyThread", testTombstoneCopyThread},
	{"RaceDeleteThread", testTombstoneRaceDeleteThread},
	{"RaceDeleteForRuns", testTombstoneRaceDeleteForRuns},
}

// MustGone fails unless err is EGONE; what names the call.
func MustGone(tb testing.TB, what string, err error) {
	tb.Helper()
	MustErrorCode(tb, what, err, saver.EGONE)
}

// putGone puts in, which must be refused with EGONE.
func putGone(tb testing.TB, s saver.Store, in saver.PutCheckpoint) {
	tb.Helper()
	if err := in.Validate(); err != nil {
		tb.Fatalf("Validate(%s): %v", in.ID, err)
	}
	MustGone(tb, fmt.Sprintf("PutCheckpoint(%s, parent %q)", in.ID, in.ParentID), s.PutCheckpoint(tb.Context(), in))
}

// writesGone puts writes against ref, which must be refused with EGONE.
func writesGone(tb testing.TB, s saver.Store, ref saver.CheckpointRef) {
	tb.Helper()
	in := saver.PutWrites{CheckpointRef: ref, Writes: []saver.Write{
		NewWrite("late", 0, "ch", "late"), NewWrite("late", -1, "__error__", "late error"),
	}}
	MustGone(tb, fmt.Sprintf("PutWrites(%s)", ref.ID), s.PutWrites(tb.Context(), in))
}

// mustListNothing fails unless the thread lists no checkpoint.
func mustListNothing(tb testing.TB, s saver.Store, ref saver.CheckpointRef) {
	tb.Helper()
	if got := MustListThread(tb, s, ref.Tenant, ref.ThreadID); len(got) != 0 {
		tb.Fatalf("thread %s lists %v, want nothing", ref.ThreadID, Positions(got))
	}
}

// deleteThread deletes ref's thread.
func deleteThread(tb testing.TB, s saver.Store, ref saver.CheckpointRef) {
	tb.Helper()
	if err := s.DeleteThread(tb.Context(), ref.Tenant, ref.ThreadID); err != nil {
		tb.Fatalf("DeleteThread: %v", err)
	}
}

// childOf returns a put of id whose parent is parent ("" for none).
func childOf(ref saver.CheckpointRef, id, parent string) saver.PutCheckpoint {
	in := NewCheckpoint(ref, id)
	in.ParentID = parent
	return in
}

// testTombstoneLatePut: LangGraph issue 7206. A run's next step, put after
// its thread was deleted with the config of its last step, stores nothing,
// in the root namespace and in a subgraph's.
func testTombstoneLatePut(t *testing.T, s saver.Store) {
	ref := NewRef()
	putThread(t, s, ref)
	deleteThread(t, s, ref)
	late := childOf(ref, "0004", "0003")
	SetChannel(&late, "a", "0004", "a at 0004")
	putGone(t, s, late)
	putGone(t, s, childOf(InNS(ref, "child:1"), "0003", "0002"))
	mustListNothing(t, s, ref)
	MustNotFind(t, s, late.CheckpointRef)
	// Nor did its blob land: a fresh put referencing it finds no value.
	fresh := childOf(ref, "0100", "")
	fresh.ChannelVersions["a"] = "0004"
	MustPutCheckpoint(t, s, fresh)
	if tup := MustGetTuple(t, s, fresh.CheckpointRef); len(tup.Values) != 0 {
		t.Fatalf("the refused put's blob is stored: %v", Values(tup))
	}
}

// testTombstoneLatePutWrites: put_writes against a deleted checkpoint, a
// task of the step that was running, stores nothing.
func testTombstoneLatePutWrites(t *testing.T, s saver.Store) {
	ref := NewRef()
	d := putThread(t, s, ref)
	deleteThread(t, s, ref)
	for _, in := range d.puts {
		writesGone(t, s, in.CheckpointRef)
	}
	mustListNothing(t, s, ref)
}

// testTombstoneRePut: a put of a deleted checkpoint's id, with its parent
// or without one, stores nothing.
func testTombstoneRePut(t *testing.T, s saver.Store) {
	ref := NewRef()
	d := putThread(t, s, ref)
	deleteThread(t, s, ref)
	for _, in := range d.puts {
		putGone(t, s, stripped(in))
		putGone(t, s, childOf(InNS(ref, in.NS), in.ID, ""))
	}
	mustListNothing(t, s, ref)
}

// testTombstoneFreshRun: after a deletion, a run on the same thread id
// starts with a put without a parent, continues from it and puts its
// writes; the checkpoints that were never stored (the orphans' ids) are no
// deletion's either.
func testTombstoneFreshRun(t *testing.T, s saver.Store) {
	ref := NewRef()
	d := putThread(t, s, ref)
	deleteThread(t, s, ref)
	first := childOf(ref, "0100", "")
	SetChannel(&first, "a", "0100", "a at 0100")
	MustPutCheckpoint(t, s, first)
	MustPutWrites(t, s, first.CheckpointRef, NewWrite("task", 0, "ch", "fresh"))
	next := childOf(ref, "0101", "0100")
	next.ChannelVersions["a"] = "0100"
	MustPutCheckpoint(t, s, next)
	MustPutWrites(t, s, next.CheckpointRef, NewWrite("task", 0, "ch", "fresh next"))
	if got, want := IDs(MustListThread(t, s, ref.Tenant, ref.ThreadID)), []string{"0101", "0100"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("thread lists %v, want %v", got, want)
	}
	tup := MustGetTuple(t, s, next.CheckpointRef)
	if len(tup.Values) != 1 || len(tup.Writes) != 1 {
		t.Fatalf("fresh run's 0101: values %v, writes %v; want a's and one write", Values(tup), WriteValues(tup))
	}
	for _, o := range d.orphans {
		MustPutWrites(t, s, o, NewWrite("task", 0, "ch", "writes before their checkpoint"))
	}
}

// testTombstoneParentNeverStored: a put whose parent no deletion removed
// (it was never stored) is stored, on a deleted thread too.
func testTombstoneParentNeverStored(t *testing.T, s saver.Store) {
	ref := NewRef()
	putThread(t, s, ref)
	deleteThread(t, s, ref)
	MustPutCheckpoint(t, s, childOf(ref, "0200", "0199"))
	MustGetTuple(t, s, At(ref, "0200"))
}

// testTombstoneDeleteForRuns: the checkpoints delete_for_runs removes are
// tombstoned, those it keeps are not: a checkpoint of another run whose
// parent it deleted stays, and runs continue from what stays.
func testTombstoneDeleteForRuns(t *testing.T, s saver.Store) {
	ref := NewRef()
	runs := []struct{ id, parent, run string }{
		{"0001", "", "run-1"}, {"0002", "0001", "run-2"}, {"0003", "0002", "run-2"}, {"0004", "0003", "run-3"},
	}
	for _, r := range runs {
		in := childOf(ref, r.id, r.parent)
		in.Metadata["run_id"] = r.run
		MustPutCheckpoint(t, s, in)
		MustPutWrites(t, s, in.CheckpointRef, NewWrite("task", 0, "ch", "on "+r.id))
	}
	if err := s.DeleteForRuns(t.Context(), ref.Tenant, []string{"run-2"}); err != nil {
		t.Fatalf("DeleteForRuns: %v", err)
	}
	putGone(t, s, childOf(ref, "0005", "0003"))
	putGone(t, s, childOf(ref, "0002", "0001"))
	writesGone(t, s, At(ref, "0002"))
	writesGone(t, s, At(ref, "0003"))
	MustPutCheckpoint(t, s, childOf(ref, "0006", "0004"))
	MustPutCheckpoint(t, s, childOf(ref, "0007", "0001"))
	MustPutWrites(t, s, At(ref, "0004"), NewWrite("task", 1, "ch", "more on 0004"))
	if got, want := IDs(MustListThread(t, s, ref.Tenant, ref.ThreadID)), []string{"0007", "0006", "0004", "0001"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("thread lists %v, want %v", got, want)
	}
	if tup := MustGetTuple(t, s, At(ref, "0004")); len(tup.Writes) != 2 {
		t.Fatalf("0004 has writes %v, want 2", WriteValues(tup))
	}
}

// testTombstonePruneDelete: prune's delete is a deletion like DeleteThread.
func testTombstonePruneDelete(t *testing.T, s saver.Store) {
	ref := NewRef()
	putThread(t, s, ref)
	if err := s.Prune(t.Context(), ref.Tenant, []string{ref.ThreadID}, saver.PruneDelete); err != nil {
		t.Fatalf("Prune: %v", err)
	}
	putGone(t, s, childOf(ref, "0004", "0003"))
	writesGone(t, s, At(ref, "0003"))
	mustListNothing(t, s, ref)
	MustPutCheckpoint(t, s, childOf(ref, "0100", ""))
}

// testTombstonePruneKeepLatest: keep_latest leaves no tombstone: it removes
// the ancestors of a checkpoint it keeps, and forking from one of them is
// the caller's choice.
func testTombstonePruneKeepLatest(t *testing.T, s saver.Store) {
	ref := NewRef()
	putThread(t, s, ref)
	if err := s.Prune(t.Context(), ref.Tenant, []string{ref.ThreadID}, saver.PruneKeepLatest); err != nil {
		t.Fatalf("Prune: %v", err)
	}
	MustNotFind(t, s, At(ref, "0001"))
	MustPutCheckpoint(t, s, childOf(ref, "0004", "0001"))
	MustPutWrites(t, s, At(ref, "0002"), NewWrite("task", 0, "ch", "on a pruned checkpoint"))
}

// testTombstoneCopyThread: a copy takes no tombstone with it.
func testTombstoneCopyThread(t *testing.T, s saver.Store) {
	src := NewRef()
	putThread(t, s, src)
	if err := s.DeleteForRuns(t.Context(), src.Tenant, []string{"run-0003"}); err != nil {
		t.Fatalf("DeleteForRuns: %v", err)
	}
	putGone(t, s, childOf(src, "0004", "0003"))
	dst := src
	dst.ThreadID += "-copy"
	if err := s.CopyThread(t.Context(), src.Tenant, src.ThreadID, dst.ThreadID); err != nil {
		t.Fatalf("CopyThread: %v", err)
	}
	MustPutCheckpoint(t, s, childOf(dst, "0004", "0003"))
	MustPutCheckpoint(t, s, childOf(dst, "0003", "0002"))
	MustPutWrites(t, s, At(dst, "0003"), NewWrite("task", 0, "ch", "on the copy"))
}

// Race tests: writers keep extending chains from a thread's checkpoints,
// each put a child of the writer's last, while the thread (or the runs) is
// deleted. Their ids sort before every checkpoint of the thread, so they
// land where a deletion walking the thread in key order has already been,
// before it reaches their parents. Once the deletion returned and every
// writer stopped (at its first refused put), none of their checkpoints is
// left: a put that passed its check before its parent was tombstoned does
// not survive the deletion.

const (
	raceBase    = 520 // checkpoints before the deletion: more than one batch of it
	raceWriters = 4
	raceMaxPuts = 100_000 // a writer that never meets a tombstone fails the test
)

// putRaceBase puts raceBase checkpoints in ref's thread, a chain whose ids
// start with "5", each with a write, all of run run, and returns their ids.
func putRaceBase(t *testing.T, s saver.Store, ref saver.CheckpointRef, run string) []string {
	t.Helper()
	ids := make([]string, raceBase)
	for i := range ids {
		ids[i] = fmt.Sprintf("5%05d", i)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < len(ids); i += 8 {
				in := childOf(ref, ids[i], "")
				if i > 0 {
					in.ParentID = ids[i-1]
				}
				in.Metadata["run_id"] = run
				if err := s.PutCheckpoint(t.Context(), in); err != nil {
					t.Errorf("PutCheckpoint(%s): %v", in.ID, err)
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return ids
}

// raceWriter extends a chain from parent until a put or its writes are
// refused with EGONE, and returns how many puts it stored. Its ids count
// down from "4...", below every id of putRaceBase.
func raceWriter(t *testing.T, s saver.Store, ref saver.CheckpointRef, w int, parent, run string, started *sync.WaitGroup) int {
	stored := 0
	for k := range raceMaxPuts {
		in := childOf(ref, fmt.Sprintf("4%d%06d", w, raceMaxPuts-k), parent)
		in.Metadata["run_id"] = run
		err := s.PutCheckpoint(t.Context(), in)
		if err == nil {
			err = s.PutWrites(t.Context(), saver.PutWrites{CheckpointRef: in.CheckpointRef, Writes: []saver.Write{NewWrite("late", 0, "ch", in.ID)}})
		}
		if k == 0 {
			started.Done()
		}
		var se *saver.Error
		if errors.As(err, &se) && se.Code == saver.EGONE {
			return stored
		}
		if err != nil {
			t.Errorf("writer %d: put %s: %v", w, in.ID, err)
			return stored
		}
		stored++
		parent = in.ID
	}
	t.Errorf("writer %d: %d puts and none refused", w, raceMaxPuts)
	return stored
}

// race runs the writers, one from each of parents, their checkpoints of
// run run, and del once every writer has put once, and returns how many
// puts the writers stored.
func race(t *testing.T, s saver.Store, ref saver.CheckpointRef, parents []string, run string, del func() error) int {
	var wg, started sync.WaitGroup
	counts := make([]int, len(parents))
	started.Add(len(parents))
	for w, p := range parents {
		wg.Go(func() { counts[w] = raceWriter(t, s, ref, w, p, run, &started) })
	}
	started.Wait()
	if err := del(); err != nil {
		t.Errorf("deletion: %v", err)
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

func testTombstoneRaceDeleteThread(t *testing.T, s saver.Store) {
	ref := NewRef()
	ids := putRaceBase(t, s, ref, "run-base")
	parents := []string{ids[len(ids)-1], ids[len(ids)/2], ids[len(ids)/4], ids[0]}[:raceWriters]
	n := race(t, s, ref, parents, "run-late", func() error { return s.DeleteThread(t.Context(), ref.Tenant, ref.ThreadID) })
	t.Logf("the writers stored %d puts before they were refused", n)
	mustListNothing(t, s, ref)
	MustPutCheckpoint(t, s, childOf(ref, "9000", ""))
}

func testTombstoneRaceDeleteForRuns(t *testing.T, s saver.Store) {
	ref := NewRef()
	doomed := "run-doomed-" + ref.ThreadID
	ids := putRaceBase(t, s, ref, doomed)
	keep := childOf(ref, "600000", ids[len(ids)-1])
	keep.Metadata["run_id"] = "run-kept"
	MustPutCheckpoint(t, s, keep)
	parents := []string{ids[len(ids)-1], ids[len(ids)/2], ids[len(ids)/4], ids[0]}[:raceWriters]
	// The writers are the late steps of the run being deleted.
	n := race(t, s, ref, parents, doomed, func() error {
		return s.DeleteForRuns(t.Context(), ref.Tenant, []string{doomed})
	})
	t.Logf("the writers stored %d puts before they were refused", n)
	if got := IDs(MustListThread(t, s, ref.Tenant, ref.ThreadID)); len(got) != 1 || got[0] != keep.ID {
		t.Fatalf("thread lists %v, want only the kept run's %s", got, keep.ID)
	}
}

// expiryTombstoneTests run in RunExpiry, with the store's default
// tombstone lifetime (saver.DefaultTombstoneLifetime).
var expiryTombstoneTests = []expiryTest{
	{"Expire", testTombstonesExpire},
}

// testTombstonesExpire: a tombstone refuses until the lifetime has passed;
// then a late put is stored as a new checkpoint, and nothing the deletion
// or the refused writes left comes back with it.
func testTombstonesExpire(t *testing.T, s ExpiryStore, clock *Clock) {
	ref := NewRef()
	d := putThread(t, s, ref)
	deleteThread(t, s, ref)
	last := d.puts[2]
	writesGone(t, s, last.CheckpointRef)
	clock.Advance(saver.DefaultTombstoneLifetime - time.Second)
	putGone(t, s, childOf(ref, "0004", last.ID))
	putGone(t, s, stripped(last))
	clock.Advance(time.Second)
	MustPutCheckpoint(t, s, childOf(ref, "0004", last.ID))
	MustPutCheckpoint(t, s, stripped(last))
	if tup := MustGetTuple(t, s, last.CheckpointRef); len(tup.Values) != 0 || len(tup.Writes) != 0 {
		t.Fatalf("%s came back with values %v and writes %v", last.ID, Values(tup), WriteValues(tup))
	}
	MustPutWrites(t, s, last.CheckpointRef, NewWrite("task", 0, "ch", "after the tombstone"))
}
