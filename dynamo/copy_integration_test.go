//go:build integration

package dynamo_test

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/saver-dev/saver/dynamo"
	"github.com/saver-dev/saver/localstack"
	"github.com/saver-dev/saver/storetest"
)

// TestCopyThreadMemoryIsBounded copies a thread of 64 MiB of values kept in
// DynamoDB items (256 KiB each, under the offload threshold, none a
// patch on another) with a replica
// that remembers none of them: the heap grows by a page of the thread and
// a batch being sent, far less than the thread, and the copy reads back
// whole. Before, the copy read the whole thread into memory first.
func TestCopyThreadMemoryIsBounded(t *testing.T) {
	st := localstack.MustStore(t)
	ref := storetest.NewRef()
	const n, size = 256, 256 << 10
	// Values share nothing, so that none is stored as a patch on another.
	value := func(i int) string {
		b := make([]byte, size)
		rand.NewChaCha8([32]byte{byte(i), byte(i >> 8)}).Read(b)
		return hex.EncodeToString(b)[:size]
	}
	for i := range n {
		in := storetest.NewCheckpoint(ref, fmt.Sprintf("%08d", i))
		storetest.SetChannel(&in, "messages", fmt.Sprint(i), value(i))
		storetest.MustPutCheckpoint(t, st.Store, in)
	}
	cold := dynamo.NewStore(st.DB, st.Store.Table())
	cold.Offload = st.Offload
	dst := ref
	dst.ThreadID += "-copy"
	st.DBRequests.Reset()
	var err error
	grown := storetest.PeakHeapGrowth(func() { err = cold.CopyThread(t.Context(), ref.Tenant, ref.ThreadID, dst.ThreadID) })
	if err != nil {
		t.Fatal(err)
	}
	grew := float64(grown) / (1 << 20)
	t.Logf("copy of %d MiB: heap grew by %.0f MiB at most; DynamoDB requests %v", n*size>>20, grew, st.DBRequests.Snapshot())
	// A page is 1 MB and a request about as much, but the SDK holds their
	// bodies besides their items, and the garbage of each waits for the
	// collector: the bound is half the thread, which the old copy's heap
	// passed several times over.
	if grew >= n*size>>20/2 {
		t.Fatalf("the copy of a %d MiB thread grew the heap by %.0f MiB", n*size>>20, grew)
	}
	if got := storetest.MustListNodes(t, cold, dst.Tenant, dst.ThreadID); len(got) != n {
		t.Fatalf("copied %d checkpoints of %d", len(got), n)
	}
	for _, i := range []int{0, n / 2, n - 1} {
		got := storetest.MustGetTuple(t, cold, storetest.At(dst, fmt.Sprintf("%08d", i)))
		if len(got.Values) != 1 || string(got.Values[0].Value.Data) != value(i) {
			t.Fatalf("checkpoint %d of the copy: values differ", i)
		}
	}
}
