package storetest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver"
)

var concurrencyTests = []test{
	{"PutWrites", testConcurrentPutWrites},
	{"PutCheckpointNamespaces", testConcurrentPutCheckpointNamespaces},
}

// taskWrites returns what task i of testConcurrentPutWrites writes: its own
// writes, a special write, and a write every task shares with the same value.
func taskWrites(i int) []saver.Write {
	task := fmt.Sprintf("task-%02d", i)
	return []saver.Write{
		NewWrite(task, 0, "ch", task+" first"),
		NewWrite(task, 1, "ch", task+" second"),
		NewWrite(task, -1, "__error__", task+" error"),
		NewWrite("shared", 0, "ch", "same for all"),
	}
}

// testConcurrentPutWrites runs 32 PutWrites on one checkpoint at once (the
// parallel tasks of one superstep) and expects what 32 serial calls store.
func testConcurrentPutWrites(t *testing.T, s saver.Store) {
	const n = 32
	serial, parallel := NewRef(), NewRef()
	for _, ref := range []saver.CheckpointRef{serial, parallel} {
		MustPutCheckpoint(t, s, NewCheckpoint(ref, "0001"))
	}
	for i := range n {
		MustPutWrites(t, s, At(serial, "0001"), taskWrites(i)...)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			in := saver.PutWrites{CheckpointRef: At(parallel, "0001"), Writes: taskWrites(i)}
			if err := s.PutWrites(t.Context(), in); err != nil {
				t.Errorf("PutWrites(task %d): %v", i, err)
			}
		})
	}
	wg.Wait()
	want, got := MustGetTuple(t, s, serial).Writes, MustGetTuple(t, s, parallel).Writes
	if len(want) != 3*n+1 {
		t.Fatalf("serial writes: %d, want %d", len(want), 3*n+1)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("concurrent writes mismatch (-serial +concurrent):\n%s", diff)
	}
}

// testConcurrentPutCheckpointNamespaces puts checkpoints in several
// namespaces of one thread at once (subgraphs running in parallel), all
// inserting the same shared blob.
func testConcurrentPutCheckpointNamespaces(t *testing.T, s saver.Store) {
	const namespaces, perNS = 8, 8
	ref := NewRef()
	nsName := func(i int) string { return fmt.Sprintf("child:%d", i) }
	var wg sync.WaitGroup
	for i := range namespaces {
		for j := range perNS {
			wg.Go(func() {
				in := NewCheckpoint(InNS(ref, nsName(i)), fmt.Sprintf("%04d", j))
				SetChannel(&in, "shared", "1", "shared value")
				SetChannel(&in, "own", fmt.Sprint(j), fmt.Sprintf("%d/%d", i, j))
				if err := in.Validate(); err != nil {
					t.Errorf("Validate: %v", err)
					return
				}
				if err := s.PutCheckpoint(t.Context(), in); err != nil {
					t.Errorf("PutCheckpoint(%d/%d): %v", i, j, err)
				}
			})
		}
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if got, want := len(MustListThread(t, s, ref.Tenant, ref.ThreadID)), namespaces*perNS; got != want {
		t.Fatalf("thread lists %d checkpoints, want %d", got, want)
	}
	for i := range namespaces {
		ns := nsName(i)
		tuples := MustList(t, s, saver.ListFilter{Tenant: ref.Tenant, ThreadID: ref.ThreadID, NS: &ns})
		if len(tuples) != perNS {
			t.Fatalf("namespace %s lists %d checkpoints, want %d", ns, len(tuples), perNS)
		}
		for k, tup := range tuples {
			j := perNS - 1 - k
			if got, want := tup.ID, fmt.Sprintf("%04d", j); got != want {
				t.Fatalf("namespace %s position %d = %s, want %s", ns, k, got, want)
			}
			want := map[string]string{"shared": "shared value", "own": fmt.Sprintf("%d/%d", i, j)}
			if diff := cmp.Diff(want, Values(tup)); diff != "" {
				t.Fatalf("values of %s/%s mismatch (-want +got):\n%s", ns, tup.ID, diff)
			}
		}
	}
}
