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

// putChain puts n checkpoints in ref's thread, a chain of run run whose
// ids start with "5", and returns the ids.
func putChain(t *testing.T, s *Store, ref saver.CheckpointRef, n int, run string) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("5%05d", i)
		in := storetest.NewCheckpoint(ref, ids[i])
		if i > 0 {
			in.ParentID = ids[i-1]
		}
		in.Metadata["run_id"] = run
		storetest.MustPutCheckpoint(t, s, in)
	}
	return ids
}

// TestTombstoneStragglers puts, between two transactions of a deletion, a
// child of a checkpoint it has not reached yet, where it has already been
// (an id that sorts first): the put is stored, as its parent has no
// tombstone yet, and the deletion must still remove it, with its writes.
func TestTombstoneStragglers(t *testing.T) {
	for _, tc := range []struct {
		name string
		del  func(s *Store, ref saver.CheckpointRef, run string) error
	}{
		{"DeleteThread", func(s *Store, ref saver.CheckpointRef, _ string) error {
			return s.DeleteThread(t.Context(), ref.Tenant, ref.ThreadID)
		}},
		{"DeleteForRuns", func(s *Store, ref saver.CheckpointRef, run string) error {
			return s.DeleteForRuns(t.Context(), ref.Tenant, []string{run})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := openClocked(t)
			ref := storetest.NewRef()
			ids := putChain(t, s, ref, maxDeleteBatch+maxRunBatch, "run-1")
			last := ids[len(ids)-1]
			late := storetest.NewCheckpoint(ref, "4late")
			late.ParentID, late.Metadata["run_id"] = last, "run-1"
			puts := 0
			s.SetBuryHook(func() {
				if puts++; puts > 1 {
					return
				}
				storetest.MustPutCheckpoint(t, s, late)
				storetest.MustPutWrites(t, s, late.CheckpointRef, storetest.NewWrite("task", 0, "ch", "late"))
				next := storetest.NewCheckpoint(ref, "3later")
				next.ParentID, next.Metadata["run_id"] = late.ID, "run-1"
				storetest.MustPutCheckpoint(t, s, next)
			})
			if err := tc.del(s, ref, "run-1"); err != nil {
				t.Fatalf("deletion: %v", err)
			}
			if puts < 2 {
				t.Fatalf("the deletion took %d transactions; the test needs two or more", puts)
			}
			if got := storetest.IDs(storetest.MustListThread(t, s, ref.Tenant, ref.ThreadID)); len(got) != 0 {
				t.Fatalf("thread lists %v after the deletion, want nothing", got)
			}
			if n := countKeys(t, s)[2]; n != 0 {
				t.Fatalf("%d writes left, want none", n)
			}
			err := s.PutWrites(t.Context(), saver.PutWrites{CheckpointRef: late.CheckpointRef, Writes: []saver.Write{storetest.NewWrite("task", 1, "ch", "later")}})
			storetest.MustGone(t, "PutWrites(4late)", err)
		})
	}
}

// TestSweepTombstones: Sweep removes tombstones once they expire, and not
// before.
func TestSweepTombstones(t *testing.T) {
	s, clock := openClocked(t)
	ref := storetest.NewRef()
	putChain(t, s, ref, 3, "run-1")
	if err := s.DeleteThread(t.Context(), ref.Tenant, ref.ThreadID); err != nil {
		t.Fatalf("DeleteThread: %v", err)
	}
	if got, err := s.Sweep(t.Context()); err != nil || got != 0 {
		t.Fatalf("Sweep before expiry = %d, %v; want 0", got, err)
	}
	if n := tombstones(t, s); n != 3 {
		t.Fatalf("%d tombstones, want 3", n)
	}
	clock.Advance(saver.DefaultTombstoneLifetime + time.Second)
	if got, err := s.Sweep(t.Context()); err != nil || got != 3 {
		t.Fatalf("Sweep after expiry = %d, %v; want 3", got, err)
	}
	if n := tombstones(t, s); n != 0 {
		t.Fatalf("%d tombstones left, want 0", n)
	}
}

// TestTombstoneLifetime: WithTombstoneLifetime sets how long they refuse.
func TestTombstoneLifetime(t *testing.T) {
	clock := storetest.NewClock()
	s, err := Open(filepath.Join(t.TempDir(), "saver.db"), WithNow(clock.Now), WithTombstoneLifetime(time.Hour), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	ref := storetest.NewRef()
	ids := putChain(t, s, ref, 2, "run-1")
	if err := s.DeleteThread(t.Context(), ref.Tenant, ref.ThreadID); err != nil {
		t.Fatalf("DeleteThread: %v", err)
	}
	late := storetest.NewCheckpoint(ref, "6late")
	late.ParentID = ids[1]
	clock.Advance(time.Hour - time.Second)
	storetest.MustGone(t, "PutCheckpoint before the hour", s.PutCheckpoint(t.Context(), late))
	clock.Advance(time.Second)
	storetest.MustPutCheckpoint(t, s, late)
}

// tombstones counts the tombstones stored.
func tombstones(t *testing.T, s *Store) int {
	t.Helper()
	n := 0
	if err := s.db.View(func(tx kvTx) error { n = keyCount(tx.Bucket(bucketTombstones)); return nil }); err != nil {
		t.Fatalf("View: %v", err)
	}
	return n
}

// TestTombstonesAcrossOpen checks that a store that skips the tombstone
// lookup while it holds none still refuses late puts and writes after a
// deletion, and after it is opened again with the tombstones in it; and
// that a store opened with none skips the lookup again.
func TestTombstonesAcrossOpen(t *testing.T) {
	for _, engine := range []string{EnginePebble, EngineBolt} {
		t.Run(engine, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "saver.db")
			open := func() *Store {
				t.Helper()
				s, err := Open(path, WithEngine(engine), WithLogger(slog.New(slog.DiscardHandler)))
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				return s
			}
			s := open()
			if s.stones.Load() {
				t.Fatal("a new store says it may hold tombstones")
			}
			ref := storetest.NewRef()
			ids := putChain(t, s, ref, 2, "run-1")
			if err := s.DeleteThread(t.Context(), ref.Tenant, ref.ThreadID); err != nil {
				t.Fatalf("DeleteThread: %v", err)
			}
			late := storetest.NewCheckpoint(ref, "6late")
			late.ParentID = ids[1]
			gone := storetest.NewCheckpoint(ref, ids[1])
			write := storetest.NewWrite("task", 0, "ch", "late")
			check := func(when string) {
				t.Helper()
				storetest.MustGone(t, "PutCheckpoint of a child "+when, s.PutCheckpoint(t.Context(), late))
				storetest.MustGone(t, "PutCheckpoint again "+when, s.PutCheckpoint(t.Context(), gone))
				storetest.MustGone(t, "PutWrites "+when, s.PutWrites(t.Context(), saver.PutWrites{CheckpointRef: gone.CheckpointRef, Writes: []saver.Write{write}}))
			}
			check("after the deletion")
			s.Close()
			s = open()
			check("after Open")
			s.Close()

			fresh := filepath.Join(t.TempDir(), "fresh.db")
			path = fresh
			s = open()
			defer s.Close()
			storetest.MustPutCheckpoint(t, s, storetest.NewCheckpoint(storetest.NewRef(), "1"))
			if s.stones.Load() {
				t.Fatal("a store that never deleted says it may hold tombstones")
			}
		})
	}
}
