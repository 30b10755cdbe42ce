package embedded_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saver-dev/saver/storetest"
)

// TestCopyThreadMemoryIsBounded copies a thread of 96 MiB of values: the
// heap grows by Pebble's cache and a few batches (20 MiB), less than the
// thread, and the copy reads back whole. Before, the copy was one transaction holding every value twice
// (collected, then in the write batch): the heap grew by 369 MiB here, and by 2.2 GB of RSS for a 381 MiB thread in the probe, while every
// other tenant's puts waited for it.
func TestCopyThreadMemoryIsBounded(t *testing.T) {
	s := MustOpen(t, filepath.Join(t.TempDir(), "saver.db"))
	ref := storetest.NewRef()
	const n, size = 384, 256 << 10
	for i := range n {
		in := storetest.NewCheckpoint(ref, fmt.Sprintf("%08d", i))
		storetest.SetChannel(&in, "messages", fmt.Sprint(i), fmt.Sprintf("%08d", i)+strings.Repeat("v", size))
		storetest.MustPutCheckpoint(t, s, in)
	}
	dst := ref
	dst.ThreadID += "-copy"
	var err error
	grown := storetest.PeakHeapGrowth(func() { err = s.CopyThread(t.Context(), ref.Tenant, ref.ThreadID, dst.ThreadID) })
	if err != nil {
		t.Fatal(err)
	}
	grew := float64(grown) / (1 << 20)
	t.Logf("copy of %d MiB: heap grew by %.0f MiB at most", n*size>>20, grew)
	// Pebble's block cache (32 MiB) and memtables fill as the copy reads and
	// writes; the thread's size is the bound not to reach.
	if grew >= n*size>>20 {
		t.Fatalf("the copy of a %d MiB thread grew the heap by %.0f MiB", n*size>>20, grew)
	}
	if got := storetest.MustListThread(t, s, dst.Tenant, dst.ThreadID); len(got) != n {
		t.Fatalf("copied %d checkpoints of %d", len(got), n)
	}
	for _, i := range []int{0, n / 2, n - 1} {
		got := storetest.MustGetTuple(t, s, storetest.At(dst, fmt.Sprintf("%08d", i)))
		if len(got.Values) != 1 || string(got.Values[0].Value.Data) != fmt.Sprintf("%08d", i)+strings.Repeat("v", size) {
			t.Fatalf("checkpoint %d of the copy: values differ", i)
		}
	}
}
