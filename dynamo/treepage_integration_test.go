//go:build integration

package dynamo_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/dynamo"
	"github.com/saver-dev/saver/localstack"
	"github.com/saver-dev/saver/storetest"
)

// mustTreeItems fails unless the thread has singles single index items and
// pages pages.
func mustTreeItems(t *testing.T, s *dynamo.Store, ref saver.CheckpointRef, singles, pages int) {
	t.Helper()
	gotSingles, gotPages, err := s.TreeItems(t.Context(), ref.Tenant, ref.ThreadID)
	if err != nil {
		t.Fatal(err)
	}
	if gotSingles != singles || gotPages != pages {
		t.Fatalf("%d singles and %d pages, want %d and %d", gotSingles, gotPages, singles, pages)
	}
}

// putRun puts checkpoints from..to-1 of ref in a chain, each in run
// fmt.Sprint("r", i/per), an error write on every seventh.
func putRun(t *testing.T, s saver.Store, ref saver.CheckpointRef, from, to, per int) {
	t.Helper()
	for i := from; i < to; i++ {
		parent := ""
		if i > 0 {
			parent = fmt.Sprintf("%04d", i-1)
		}
		id := fmt.Sprintf("%04d", i)
		putNode(t, s, ref, id, parent, fmt.Sprint("r", i/per), 0)
		if i%7 == 0 {
			storetest.MustPutWrites(t, s, storetest.At(ref, id), storetest.NewWrite("t", -1, saver.ChannelError, "boom"))
		}
	}
}

// TestTreePacked: a tree query that finds TreePackAt singles packs them
// into a page, and the next reads the index in one Query; singles put
// after (new checkpoints, an error on a packed one, an expiry set again)
// are read beside the page and win over its entry, and the next pack
// rewrites the page that held one.
func TestTreePacked(t *testing.T) {
	st := localstack.MustStore(t)
	s := withClock(st.Store, st.Store.Now)
	s.TreePackAt = 10
	ref := storetest.NewRef()
	sub := ref
	sub.NS = "child:1"
	putRun(t, s, ref, 0, 25, 10)
	putNode(t, s, sub, "0001", "", "r0", 0)
	mustIndexAgree(t, s, ref) // builds the marker: no pack yet
	mustTreeItems(t, s, ref, 30, 0)
	mustIndexAgree(t, s, ref) // packs
	mustTreeItems(t, s, ref, 0, 1)
	mustCount(t, st, requests{"Query": 1}, func() { storetest.MustListNodes(t, s, ref.Tenant, ref.ThreadID) })

	putRun(t, s, ref, 25, 28, 10)
	storetest.MustPutWrites(t, s, storetest.At(ref, "0001"), storetest.NewWrite("u", -3, saver.ChannelInterrupt, "stop"))
	storetest.MustSetExpiry(t, s, storetest.At(ref, "0002"), time.Now().Add(time.Hour).Unix())
	mustIndexAgree(t, s, ref) // 5 singles, beside the page
	mustTreeItems(t, s, ref, 5, 1)
	nodes := storetest.MustListNodes(t, s, ref.Tenant, ref.ThreadID)
	if len(nodes) != 29 || !nodes[1].HasInterrupt || !nodes[0].HasError {
		t.Fatalf("nodes %+v", nodes)
	}

	putRun(t, s, ref, 28, 32, 10)
	mustIndexAgree(t, s, ref) // packs the 10 singles; the page with 0002 rewritten
	mustTreeItems(t, s, ref, 0, 1)
	mustIndexAgree(t, s, ref)
}

// TestTreePackShortened: a thread whose index is packed, shortened by
// delete_for_runs and prune, copied, then deleted: the pages follow.
func TestTreePackShortened(t *testing.T) {
	st := localstack.MustStore(t)
	s := withClock(st.Store, st.Store.Now)
	s.TreePackAt = 5
	ref := storetest.NewRef()
	putRun(t, s, ref, 0, 40, 10)
	mustIndexAgree(t, s, ref)
	mustIndexAgree(t, s, ref)
	mustTreeItems(t, s, ref, 0, 1)

	t.Run("DeleteForRuns", func(t *testing.T) {
		// r3 is the tail: nothing of another run descends from it.
		if err := s.DeleteForRuns(t.Context(), ref.Tenant, []string{"r3"}); err != nil {
			t.Fatal(err)
		}
		mustTreeItems(t, s, ref, 0, 1)
		mustIndexAgree(t, s, ref)
		if nodes := storetest.MustListNodes(t, s, ref.Tenant, ref.ThreadID); len(nodes) != 30 {
			t.Fatalf("%d nodes after deleting run r3, want 30", len(nodes))
		}
	})
	t.Run("CopyThread", func(t *testing.T) {
		dst := ref
		dst.ThreadID = ref.ThreadID + "-copy"
		if err := s.CopyThread(t.Context(), ref.Tenant, ref.ThreadID, dst.ThreadID); err != nil {
			t.Fatal(err)
		}
		mustMarked(t, s, dst)
		mustTreeItems(t, s, dst, 0, 1)
		mustIndexAgree(t, s, dst)
	})
	t.Run("Prune", func(t *testing.T) {
		if err := s.Prune(t.Context(), ref.Tenant, []string{ref.ThreadID}, saver.PruneKeepLatest); err != nil {
			t.Fatal(err)
		}
		mustMarked(t, s, ref)
		mustIndexAgree(t, s, ref)
		if nodes := storetest.MustListNodes(t, s, ref.Tenant, ref.ThreadID); len(nodes) != 1 || nodes[0].ID != "0029" {
			t.Fatalf("nodes %+v after prune, want 0029 alone", nodes)
		}
	})
	t.Run("DeleteThread", func(t *testing.T) {
		if err := s.DeleteThread(t.Context(), ref.Tenant, ref.ThreadID); err != nil {
			t.Fatal(err)
		}
		if items := threadItemCount(t, st, ref); items != 0 {
			t.Fatalf("%d items left", items)
		}
	})
}

// TestTreePackRaces: replicas pack a thread's index at every tree query
// while others put checkpoints and errors and delete runs of it: at the
// end the index agrees with the items.
func TestTreePackRaces(t *testing.T) {
	st := localstack.MustStore(t)
	store := func() *dynamo.Store {
		s := dynamo.NewStore(st.DB, st.Store.Table())
		s.TreePackAt = 1
		return s
	}
	ref := storetest.NewRef()
	writer := store()
	for i := range 10 {
		putNode(t, writer, ref, fmt.Sprintf("0-%04d", i), "", "old", 0)
	}
	mustIndexAgree(t, writer, ref)
	var wg sync.WaitGroup
	for w := range 2 {
		s := store()
		wg.Go(func() {
			for i := range 30 {
				id := fmt.Sprintf("%d-%04d", w+1, i)
				putNode(t, s, ref, id, "", fmt.Sprintf("run-%d", i%3), 0)
				if i%4 == 0 {
					storetest.MustPutWrites(t, s, storetest.At(ref, id), storetest.NewWrite("t", -1, saver.ChannelError, "boom"))
				}
			}
		})
	}
	for range 2 {
		reader := store()
		wg.Go(func() {
			for range 15 {
				if _, err := reader.ListNodes(t.Context(), ref.Tenant, ref.ThreadID); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	deleter := store()
	wg.Go(func() {
		for _, runs := range [][]string{{"old"}, {"run-1"}, {"run-2"}} {
			if _, err := deleter.ListNodes(t.Context(), ref.Tenant, ref.ThreadID); err != nil {
				t.Error(err)
				return
			}
			if err := deleter.DeleteForRuns(t.Context(), ref.Tenant, runs); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	mustIndexAgree(t, writer, ref)
	mustIndexAgree(t, store(), ref)
}
