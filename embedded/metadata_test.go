package embedded_test

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/embedded"
)

// TestStoredMetadataOverTheLimit: metadata stored before puts were limited
// (twelve bodies of four million empty maps) was decoded whole by every
// get and search of its thread, and each search ran out of memory. A read
// measures stored metadata in place first: past the limits it is refused
// with a message naming the checkpoint, at a cost of about the record's
// bytes; the thread stays readable as a tree, a prune to its latest
// checkpoint removes the record, and the thread reads again.
func TestStoredMetadataOverTheLimit(t *testing.T) {
	eachEngine(t, func(t *testing.T, open func(tb testing.TB, opts ...embedded.Option) *embedded.Store) {
		ctx := context.Background()
		s := open(t)
		emptyMaps := make([]any, 200_000)
		for i := range emptyMaps {
			emptyMaps[i] = map[string]any{}
		}
		// Put as an earlier release did: without Validate's limits.
		for _, id := range []string{"c1", "c2"} {
			md := saver.Metadata{"source": "loop", "step": int64(1)}
			if id == "c1" {
				md["a"] = emptyMaps
			}
			in := saver.PutCheckpoint{Checkpoint: saver.Checkpoint{
				CheckpointRef: saver.CheckpointRef{ThreadID: "t", ID: id},
				ParentID:      strings.TrimSuffix("c1", id),
				Body:          saver.Typed{Type: "msgpack"},
				Metadata:      md,
			}}
			if err := s.PutCheckpoint(ctx, in); err != nil {
				t.Fatalf("PutCheckpoint %s: %v", id, err)
			}
		}
		emptyMaps = nil
		refused := func(what string, err error) {
			t.Helper()
			if got, want := saver.ErrorCode(err), saver.ETOOLARGE; got != want {
				t.Fatalf("%s: %v, want %s", what, err, want)
			}
			if msg := saver.ErrorMessage(err); !strings.Contains(msg, `checkpoint "c1"`) || !strings.Contains(msg, "10,000") {
				t.Fatalf("%s: the message names neither the checkpoint nor the limit: %s", what, msg)
			}
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := s.GetTuple(ctx, saver.CheckpointRef{ThreadID: "t", ID: "c1"})
		runtime.ReadMemStats(&after)
		refused("GetTuple", err)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
			t.Fatalf("refusing a 200,000-map record allocated %d bytes", alloc)
		}
		_, err = s.ListCheckpoints(ctx, saver.ListFilter{ThreadID: "t", Metadata: saver.Metadata{"source": "loop"}})
		refused("ListCheckpoints", err)
		if tup, err := s.GetTuple(ctx, saver.CheckpointRef{ThreadID: "t"}); err != nil || tup.ID != "c2" || tup.Metadata["step"] != int64(1) {
			t.Fatalf("GetTuple latest: %v, %v; want c2", tup, err)
		}
		nodes, err := s.ListNodes(ctx, "", "t")
		if err != nil || len(nodes) != 2 {
			t.Fatalf("ListNodes: %d nodes, %v; want both", len(nodes), err)
		}
		if err := s.Prune(ctx, "", []string{"t"}, saver.PruneKeepLatest); err != nil {
			t.Fatalf("Prune: %v", err)
		}
		if tups, err := s.ListCheckpoints(ctx, saver.ListFilter{ThreadID: "t", Metadata: saver.Metadata{"source": "loop"}}); err != nil || len(tups) != 1 {
			t.Fatalf("ListCheckpoints after the prune: %d, %v; want c2", len(tups), err)
		}
		if err := s.DeleteThread(ctx, "", "t"); err != nil {
			t.Fatalf("DeleteThread: %v", err)
		}
	})
}
