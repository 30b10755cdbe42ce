package api

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/saver-dev/saver/tree"
)

// TestEntryListMsgpack: the hand-written msgpack of tree entries decodes
// to what reflection's encoding does, at every string and number size.
func TestEntryListMsgpack(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	// Strings of every length class; long lists (an array header of 32
	// bits) of short ones.
	var short bool
	str := func() string {
		n := []int{0, 1, 31, 32, 255, 256, 65535, 65536}[rng.IntN(8)]
		if short {
			n %= 40
		}
		return strings.Repeat("é", n/2) + strings.Repeat("x", n%2)
	}
	entry := func() tree.Entry {
		return tree.Entry{
			ID: str(), NS: str(), Parent: str(), ParentNS: str(), Source: str(),
			Step:   []int64{0, 1, 127, 128, -1, -32, -33, math.MaxInt64, math.MinInt64, rng.Int64()}[rng.IntN(10)],
			Status: tree.Status(str()), HasError: rng.IntN(2) == 0, HasInterrupt: rng.IntN(2) == 0,
			OnLivePath: rng.IntN(2) == 0, Orphan: rng.IntN(2) == 0,
		}
	}
	for _, n := range []int{0, 1, 15, 16, 70_000} {
		short = n > 100
		l := make(entryList, n)
		for i := range l {
			l[i] = entry()
		}
		for _, resp := range []any{nodesResponse{Nodes: l}, treeResponse{ThreadID: "t", Nodes: l}} {
			hand, err := msgpack.Marshal(resp)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			// Decoded as a client would: every key by its name, any int width.
			var got struct {
				ThreadID string       `msgpack:"thread_id"`
				Nodes    []tree.Entry `msgpack:"nodes"`
			}
			if err := msgpack.Unmarshal(hand, &got); err != nil {
				t.Fatalf("%d entries: the hand-written form does not decode: %v", n, err)
			}
			if diff := cmp.Diff([]tree.Entry(l), got.Nodes, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("%d entries: decoded (-sent +hand-written):\n%s", n, diff)
			}
		}
	}
	if b, err := msgpack.Marshal(nodesResponse{}); err != nil || !strings.HasSuffix(string(b), "\xc0") {
		t.Fatalf("no entries = %q, %v; want nil", b, err)
	}
}
