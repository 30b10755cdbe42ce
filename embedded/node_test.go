package embedded_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/embedded"
	"github.com/saver-dev/saver/storetest"
)

// TestListNodesSkipsPayloads lists checkpoints whose body, blobs, writes and
// metadata hold megabytes: listing allocates what the nodes hold, not what
// the payloads do, so nothing of them was decoded or copied. On bbolt, whose
// values are read in place from the mapped file; Pebble reads them through
// its block cache, whose allocations follow the file's blocks.
func TestListNodesSkipsPayloads(t *testing.T) {
	s := MustOpen(t, filepath.Join(t.TempDir(), "saver.db"), embedded.WithEngine(embedded.EngineBolt))
	ref := storetest.NewRef()
	const n, big = 8, 512 << 10
	for i := range n {
		in := storetest.NewCheckpoint(ref, fmt.Sprintf("%04d", i))
		in.Body = saver.Typed{Type: "msgpack", Data: bytes.Repeat([]byte{0xc1}, big)}
		in.Metadata["writes"] = map[string]any{"agent": strings.Repeat("w", big)}
		in.Metadata["step"] = int64(i)
		storetest.SetChannel(&in, "messages", "1", strings.Repeat("m", big))
		storetest.MustPutCheckpoint(t, s, in)
		storetest.MustPutWrites(t, s, in.CheckpointRef, storetest.NewWrite("task", -1, saver.ChannelError, strings.Repeat("e", big)))
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	nodes, err := s.ListNodes(t.Context(), ref.Tenant, ref.ThreadID)
	runtime.ReadMemStats(&after)
	if err != nil || len(nodes) != n || !nodes[n-1].HasError || nodes[n-1].Step != n-1 {
		t.Fatalf("ListNodes = %+v, %v", nodes, err)
	}
	// 2 MiB of payloads per checkpoint; a node is a few hundred bytes.
	if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(64<<10); got > limit {
		t.Fatalf("ListNodes allocated %d bytes for %d nodes, want at most %d", got, n, limit)
	}
}
