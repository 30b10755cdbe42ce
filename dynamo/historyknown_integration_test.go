//go:build integration

package dynamo_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/dynamo"
	"github.com/saver-dev/saver/localstack"
	"github.com/saver-dev/saver/storetest"
)

// TestDeltaHistoryKnownReadsWhatIsNew: a replica that never read the chain
// (no chain cache) answers a client that holds the history at an ancestor
// (DeltaRequest.Known) from one Query of the checkpoints from the target
// down to that ancestor, however long the chain, and reads no seed; the
// answer spliced onto the held history is the whole. Without Known the same
// replica reads the chain back to its seed.
func TestDeltaHistoryKnownReadsWhatIsNew(t *testing.T) {
	st := localstack.MustStore(t)
	reads := &itemsRead{DynamoAPI: st.DB}
	cold := dynamo.NewStore(reads, st.Store.Table())
	cold.RememberChains(0)
	ref := storetest.NewRef()
	storetest.PutChat(t, st.Store, ref, 203, 1)
	held := storetest.MustDeltaHistory(t, st.Store, storetest.At(ref, "0200"), "messages")["messages"]

	in := saver.DeltaRequest{CheckpointRef: storetest.At(ref, "0203"), Channels: []string{"messages"}, Known: "0200"}
	var got map[string]*saver.DeltaHistory
	reads.n.Store(0)
	mustCount(t, st, requests{"Query": 1}, func() {
		var err error
		if got, err = cold.DeltaHistory(t.Context(), in); err != nil {
			t.Fatalf("DeltaHistory known 0200: %v", err)
		}
	})
	// 0200 to 0203 and their writes.
	if n := reads.n.Load(); n > 8 {
		t.Fatalf("the history known 0200 read %d items; want at most the 8 of 0200 to 0203", n)
	}
	h := got["messages"]
	if h.Next != "0200" || h.Seed != nil {
		t.Fatalf("history known 0200: next %q, seed %v; want next 0200, no seed", h.Next, h.Seed)
	}
	spliced := map[string]*saver.DeltaHistory{"messages": {Seed: held.Seed, Writes: append(held.Writes, h.Writes...)}}
	want := storetest.History{Seed: "S1", HasSeed: true, Writes: storetest.ChatWrites(1, 202)}
	if diff := cmp.Diff(want, storetest.Histories(spliced)["messages"]); diff != "" {
		t.Fatalf("held history at 0200 and the answer known 0200 (-want +spliced):\n%s", diff)
	}

	reads.n.Store(0)
	mustAgree(t, storetest.At(ref, "0203"), want, cold)
	if n := reads.n.Load(); n < 400 {
		t.Fatalf("the history without known read %d items; want the chain's, 400 and more", n)
	}

	// An ancestor named that the chain does not reach: refused, whatever
	// the replica holds.
	fork := storetest.NewRef()
	storetest.PutChat(t, st.Store, fork, 4)
	storetest.PutDelta(t, st.Store, fork, "0005", "0002", []string{"messages=5:"}, "messages")
	for _, s := range []*dynamo.Store{st.Store, cold} {
		_, err := s.DeltaHistory(t.Context(), saver.DeltaRequest{CheckpointRef: storetest.At(fork, "0005"), Channels: []string{"messages"}, Known: "0004"})
		if saver.ErrorCode(err) != saver.EINVALID {
			t.Fatalf("DeltaHistory at a fork known the other branch's 0004: %v, want %s", err, saver.EINVALID)
		}
	}
}
