package api

import (
	"encoding/json"
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
		checkColumns(t, []tree.Entry(l))
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

// wireColumns is entryColumns as a client decodes it, msgpack or JSON.
type wireColumns struct {
	ID           []string      `msgpack:"id" json:"id"`
	NS           []string      `msgpack:"ns" json:"ns"`
	Parent       []string      `msgpack:"parent" json:"parent"`
	ParentNS     []string      `msgpack:"parent_ns" json:"parent_ns"`
	Source       []string      `msgpack:"source" json:"source"`
	Step         []int64       `msgpack:"step" json:"step"`
	Status       []tree.Status `msgpack:"status" json:"status"`
	HasError     []bool        `msgpack:"has_error" json:"has_error"`
	HasInterrupt []bool        `msgpack:"has_interrupt" json:"has_interrupt"`
	OnLivePath   []bool        `msgpack:"on_live_path" json:"on_live_path"`
	Orphan       []bool        `msgpack:"orphan" json:"orphan"`
}

// Rows transposes c back to entries; every array must be as long as the
// first, and present even when empty.
func (c wireColumns) Rows(tb testing.TB) []tree.Entry {
	tb.Helper()
	n := len(c.ID)
	lens := []int{len(c.NS), len(c.Parent), len(c.ParentNS), len(c.Source), len(c.Step), len(c.Status),
		len(c.HasError), len(c.HasInterrupt), len(c.OnLivePath), len(c.Orphan)}
	for i, l := range lens {
		if l != n || (n == 0 && c.Orphan == nil) {
			tb.Fatalf("column %s has %d values, id has %d (nil: %v)", columnNames[i+1], l, n, c.Orphan == nil)
		}
	}
	out := make([]tree.Entry, n)
	for i := range out {
		out[i] = tree.Entry{
			ID: c.ID[i], NS: c.NS[i], Parent: c.Parent[i], ParentNS: c.ParentNS[i], Source: c.Source[i],
			Step: c.Step[i], Status: c.Status[i], HasError: c.HasError[i], HasInterrupt: c.HasInterrupt[i],
			OnLivePath: c.OnLivePath[i], Orphan: c.Orphan[i],
		}
	}
	return out
}

// checkColumns: entries sent as columns, in msgpack (written by hand) and
// in JSON, decode to the same entries in the same order.
func checkColumns(t *testing.T, l []tree.Entry) {
	t.Helper()
	var got struct {
		Columns wireColumns `msgpack:"columns" json:"columns"`
	}
	b, err := msgpack.Marshal(columnsResponse{Columns: l})
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	if err := msgpack.Unmarshal(b, &got); err != nil {
		t.Fatalf("%d entries: the columns do not decode: %v", len(l), err)
	}
	if diff := cmp.Diff(l, got.Columns.Rows(t), cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("%d entries: msgpack columns (-sent +decoded):\n%s", len(l), diff)
	}
	if b, err = json.Marshal(columnsResponse{Columns: l}); err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	got.Columns = wireColumns{}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%d entries: the JSON columns do not decode: %v", len(l), err)
	}
	if diff := cmp.Diff(l, got.Columns.Rows(t), cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("%d entries: JSON columns (-sent +decoded):\n%s", len(l), diff)
	}
}
