package embedded

import (
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/storetest"
)

// indexThread puts a thread with every kind of node the index holds: a
// chain with a fork, a subgraph, error and interrupt writes (one expiring
// before its checkpoint), a checkpoint that expires, a checkpoint of
// another run, and writes on a checkpoint never put.
func indexThread(t *testing.T, s *Store, clock *storetest.Clock) saver.CheckpointRef {
	t.Helper()
	ref := storetest.NewRef()
	soon := clock.Now().Add(time.Hour).Unix()
	put := func(ns, id, parent, run string, exp int64, md saver.Metadata) {
		in := storetest.NewCheckpoint(storetest.InNS(ref, ns), id)
		in.ParentID = parent
		in.Metadata = saver.Metadata{"source": "loop", "step": int64(len(id)), "run_id": run}
		for k, v := range md {
			in.Metadata[k] = v
		}
		if exp != 0 {
			in = storetest.Expiring(in, exp)
		}
		storetest.MustPutCheckpoint(t, s, in)
	}
	writes := func(ns, id string, exp int64, ws ...saver.Write) {
		in := saver.PutWrites{CheckpointRef: storetest.At(storetest.InNS(ref, ns), id), Writes: ws, ExpiresAt: exp}
		if err := s.PutWrites(t.Context(), in); err != nil {
			t.Fatalf("PutWrites: %v", err)
		}
	}
	put("", "0001", "", "run-1", 0, nil)
	put("", "0002", "0001", "run-1", 0, nil)
	put("", "0003", "0001", "run-2", 0, saver.Metadata{"source": "fork"})
	put("", "0004", "0003", "run-2", soon, nil)
	put("child:1", "0005", "", "run-2", 0, saver.Metadata{"parents": map[string]any{"": "0003"}})
	writes("", "0002", 0, storetest.NewWrite("task", 0, "ch", "v"), storetest.NewWrite("task", -1, saver.ChannelError, "boom"))
	writes("", "0003", soon, storetest.NewWrite("task", -3, saver.ChannelInterrupt, "ask"))
	writes("child:1", "0005", 0, storetest.NewWrite("a", -1, saver.ChannelError, "boom"), storetest.NewWrite("b", -3, saver.ChannelInterrupt, "ask"))
	writes("", "0009", 0, storetest.NewWrite("task", -1, saver.ChannelError, "early"))
	return ref
}

// nodeEntries returns every key and value of the nodes bucket.
func nodeEntries(t *testing.T, s *Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := s.db.View(func(tx kvTx) error {
		c := tx.Bucket(bucketNodes).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			out[string(k)] = string(v)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	return out
}

// forgetTreeIndex makes s a store written before the tree index: no entry,
// no marker. It writes through the store's one write path, which keeps
// its tree cache true.
func forgetTreeIndex(t *testing.T, s *Store) {
	t.Helper()
	err := s.writes.do(func(tx kvTx) error {
		if err := deletePrefix(tx.Bucket(bucketNodes), nil); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Delete(metaTreeIndex)
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
}

// mustMatchRebuild fails unless the tree index is what building it from
// the stored records gives: every change kept it true, and nothing of what
// is gone stayed in it.
func mustMatchRebuild(t *testing.T, s *Store) {
	t.Helper()
	kept := nodeEntries(t, s)
	reindex(t, s)
	if diff := cmp.Diff(nodeEntries(t, s), kept); diff != "" {
		t.Fatalf("tree index differs from a rebuild (-rebuilt +kept):\n%s", diff)
	}
}

func openIndexed(t *testing.T, path, engine string, clock *storetest.Clock) *Store {
	t.Helper()
	s, err := Open(path, WithEngine(engine), WithNow(clock.Now), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

// TestTreeIndexBuiltOnOpen opens a store written before the tree index:
// Open builds it, and the nodes are those the records hold.
func TestTreeIndexBuiltOnOpen(t *testing.T) {
	for _, engine := range []string{EnginePebble, EngineBolt} {
		t.Run(engine, func(t *testing.T) {
			clock := storetest.NewClock()
			path := filepath.Join(t.TempDir(), "saver.db")
			s := openIndexed(t, path, engine, clock)
			a, b := indexThread(t, s, clock), indexThread(t, s, clock)
			wantA := storetest.MustListNodes(t, s, a.Tenant, a.ThreadID)
			wantB := storetest.MustListNodes(t, s, b.Tenant, b.ThreadID)
			if len(wantA) != 5 {
				t.Fatalf("ListNodes = %d nodes, want 5", len(wantA))
			}
			forgetTreeIndex(t, s)
			if got := storetest.MustListNodes(t, s, a.Tenant, a.ThreadID); len(got) != 0 {
				t.Fatalf("ListNodes without the index = %d nodes: it reads the records", len(got))
			}
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			s = openIndexed(t, path, engine, clock)
			defer s.Close()
			storetest.MustEqualNodes(t, s, a.Tenant, a.ThreadID, wantA)
			storetest.MustEqualNodes(t, s, b.Tenant, b.ThreadID, wantB)
			clock.Advance(2 * time.Hour)
			if got := storetest.MustListNodes(t, s, a.Tenant, a.ThreadID); len(got) != 4 || got[2].HasInterrupt {
				t.Fatalf("after expiry ListNodes = %+v, want 4 nodes, 0003 without its interrupt", got)
			}
		})
	}
}

// TestTreeIndexFollowsChanges checks after every call that changes a
// thread that the index is what the stored records give.
func TestTreeIndexFollowsChanges(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, s *Store, clock *storetest.Clock, ref saver.CheckpointRef)
	}{
		{"Put", func(*testing.T, *Store, *storetest.Clock, saver.CheckpointRef) {}},
		{"Upsert", func(t *testing.T, s *Store, _ *storetest.Clock, ref saver.CheckpointRef) {
			in := storetest.NewCheckpoint(ref, "0002")
			in.ParentID, in.Metadata = "0003", saver.Metadata{"source": "update", "step": int64(9)}
			storetest.MustPutCheckpoint(t, s, in)
		}},
		{"SetExpiry", func(t *testing.T, s *Store, clock *storetest.Clock, ref saver.CheckpointRef) {
			for id, exp := range map[string]int64{"0002": clock.Now().Add(time.Minute).Unix(), "0003": 0, "0004": clock.Now().Add(48 * time.Hour).Unix()} {
				if err := s.SetExpiry(t.Context(), storetest.At(ref, id), exp); err != nil {
					t.Fatalf("SetExpiry(%s): %v", id, err)
				}
			}
		}},
		{"Sweep", func(t *testing.T, s *Store, clock *storetest.Clock, _ saver.CheckpointRef) {
			clock.Advance(2 * time.Hour)
			if _, err := s.Sweep(t.Context()); err != nil {
				t.Fatalf("Sweep: %v", err)
			}
		}},
		{"DeleteThread", func(t *testing.T, s *Store, _ *storetest.Clock, ref saver.CheckpointRef) {
			if err := s.DeleteThread(t.Context(), ref.Tenant, ref.ThreadID); err != nil {
				t.Fatalf("DeleteThread: %v", err)
			}
		}},
		{"DeleteForRuns", func(t *testing.T, s *Store, _ *storetest.Clock, ref saver.CheckpointRef) {
			if err := s.DeleteForRuns(t.Context(), ref.Tenant, []string{"run-1"}); err != nil {
				t.Fatalf("DeleteForRuns: %v", err)
			}
		}},
		{"PruneKeepLatest", func(t *testing.T, s *Store, _ *storetest.Clock, ref saver.CheckpointRef) {
			if err := s.Prune(t.Context(), ref.Tenant, []string{ref.ThreadID}, saver.PruneKeepLatest); err != nil {
				t.Fatalf("Prune: %v", err)
			}
		}},
		{"CopyThread", func(t *testing.T, s *Store, _ *storetest.Clock, ref saver.CheckpointRef) {
			if err := s.CopyThread(t.Context(), ref.Tenant, ref.ThreadID, "copy"); err != nil {
				t.Fatalf("CopyThread: %v", err)
			}
			if got := storetest.MustListNodes(t, s, ref.Tenant, "copy"); len(got) != 5 {
				t.Fatalf("copy has %d nodes, want 5", len(got))
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := storetest.NewClock()
			s := openIndexed(t, filepath.Join(t.TempDir(), "saver.db"), EnginePebble, clock)
			defer s.Close()
			ref := indexThread(t, s, clock)
			indexThread(t, s, clock) // another thread, which the change leaves alone
			before := nodeEntries(t, s)
			tt.change(t, s, clock, ref)
			if tt.name != "Put" && cmp.Equal(before, nodeEntries(t, s)) {
				t.Fatalf("%s changed nothing in the index", tt.name)
			}
			mustMatchRebuild(t, s)
		})
	}
}

// reindex builds the tree index again from the stored records, as Open
// does on a store written before it: for records tests write as an older
// release did.
func reindex(t *testing.T, s *Store) {
	t.Helper()
	forgetTreeIndex(t, s)
	if err := s.indexTree(t.Context()); err != nil {
		t.Fatalf("indexTree: %v", err)
	}
}
