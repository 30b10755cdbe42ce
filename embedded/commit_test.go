package embedded

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/saver-dev/saver/storetest"
)

// heldEngine is an engine whose next commit a test holds until it lets it
// go, and whose next commit after that fails once its functions ran, as a
// commit that finds the disk full does: nothing of it is stored.
type heldEngine struct {
	engine
	mu   sync.Mutex
	hold chan struct{} // the held commit sends on it, then waits on it
	fail error
}

func (e *heldEngine) Update(fn func(kvTx) error) error {
	e.mu.Lock()
	hold, fail := e.hold, e.fail
	if hold != nil {
		e.hold, fail = nil, nil
	} else {
		e.fail = nil
	}
	e.mu.Unlock()
	if hold != nil {
		hold <- struct{}{}
		<-hold
	}
	return e.engine.Update(func(tx kvTx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return fail
	})
}

// failNext makes the next commit fail with err.
func (e *heldEngine) failNext(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.fail = err
}

// waitQueued waits until n writes wait for the group commit.
func waitQueued(t *testing.T, s *Store, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; runtime.Gosched() {
		s.writes.mu.Lock()
		got := len(s.writes.queue)
		s.writes.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d writes queued, want %d", got, n)
		}
	}
}

// TestDeletionAfterAFailedSharedCommit deletes a thread of more checkpoints
// than one transaction deletes while its first batch shares a commit with
// another tenant's put and that commit fails: each runs again alone, and
// every key of the thread is deleted. Before, the deletion's function moved
// its resume key itself, so its run alone started past the batch the failed
// commit had rolled back: those 500 checkpoints stayed.
func TestDeletionAfterAFailedSharedCommit(t *testing.T) {
	s, _ := openClocked(t)
	ref := storetest.NewRef()
	const n = maxDeleteBatch + 100
	for i := range n {
		in := storetest.NewCheckpoint(ref, fmt.Sprintf("%06d", i))
		storetest.SetChannel(&in, "messages", fmt.Sprint(i), "v")
		storetest.MustPutCheckpoint(t, s, in)
		storetest.MustPutWrites(t, s, in.CheckpointRef, storetest.NewWrite("t", 0, "ch", "w"))
	}
	e := &heldEngine{engine: s.db, hold: make(chan struct{})}
	s.writes.db = e
	hold := e.hold
	other := storetest.NewRef()
	var (
		wg     sync.WaitGroup
		delErr error
	)
	wg.Go(func() { storetest.MustPutCheckpoint(t, s, storetest.NewCheckpoint(other, "1")) })
	<-hold // the put's commit runs; the next writes queue up behind it
	wg.Go(func() { delErr = s.DeleteThread(t.Context(), ref.Tenant, ref.ThreadID) })
	waitQueued(t, s, 1)
	wg.Go(func() { storetest.MustPutCheckpoint(t, s, storetest.NewCheckpoint(other, "2")) })
	waitQueued(t, s, 2)
	e.failNext(errors.New("injected commit failure"))
	hold <- struct{}{}
	wg.Wait()
	if delErr != nil {
		t.Fatal(delErr)
	}
	prefix := key(ref.Tenant, ref.ThreadID)
	err := s.db.View(func(tx kvTx) error {
		for _, name := range threadBuckets {
			left := 0
			c := tx.Bucket(name).Cursor()
			for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
				left++
			}
			if left > 0 {
				t.Errorf("%d keys of the deleted thread left in %s", left, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := storetest.MustListThread(t, s, other.Tenant, other.ThreadID); len(got) != 2 {
		t.Fatalf("the other thread has %d checkpoints, want 2", len(got))
	}
}
