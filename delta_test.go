package saver_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver"
)

func TestChainNeeds(t *testing.T) {
	counted := saver.Metadata{saver.DeltaCountersKey: map[string]any{"messages": []any{int64(3), int64(4)}, "notes": []any{int64(0), int64(2)}, "unwritten": []any{int64(0), int64(9)}}}
	versions := map[string]string{"messages": "4", "notes": "2", "branch:to:chat": "4"}
	tests := []struct {
		name    string
		md      saver.Metadata
		present map[string]bool
		want    []string
	}{
		{"NotADeltaThread", saver.Metadata{"step": int64(1)}, nil, nil},
		// A DeltaChannel never written has no version: nothing to rebuild.
		// An ephemeral channel with an empty value is no DeltaChannel.
		{"CountedWithVersions", counted, nil, []string{"messages", "notes"}},
		{"SnapshotHere", counted, map[string]bool{"notes": true}, []string{"messages"}},
		{"BadCounters", saver.Metadata{saver.DeltaCountersKey: "x"}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := saver.ChainNeeds(tt.md, versions, func(ch string) bool { return tt.present[ch] })
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("ChainNeeds (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChain(t *testing.T) {
	node := func(id, parent string, needs []string, seeds ...string) *saver.ChainNode {
		n := &saver.ChainNode{ID: id, ParentID: parent, Needs: needs, Seeds: map[string]bool{}}
		for _, s := range seeds {
			n.Seeds[s] = true
		}
		return n
	}
	nodes := map[string]*saver.ChainNode{}
	for _, n := range []*saver.ChainNode{
		node("1", "", nil, "a", "b"),
		node("2", "1", []string{"a", "b"}),
		node("3", "2", []string{"b"}, "a"),
		node("4", "3", []string{"a", "b"}),
		node("5", "4", nil),
		node("fork", "2", []string{"a"}),
		node("loop1", "loop2", []string{"a"}),
		node("loop2", "loop1", []string{"a"}),
		node("orphan", "gone", []string{"a"}),
	} {
		nodes[n.ID] = n
	}
	tests := []struct {
		id   string
		want []string
	}{
		{"5", nil},                     // needs nothing
		{"1", nil},                     // a root
		{"4", []string{"3", "2", "1"}}, // a seeds at 3, b only at 1
		{"3", []string{"2", "1"}},
		{"2", []string{"1"}},
		{"fork", []string{"2", "1"}}, // its own chain, not 3 and 4
		{"loop1", []string{"loop2"}},
		{"orphan", nil},
		{"unknown", nil},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			got, err := saver.Chain(nodes[tt.id], func(id string) (*saver.ChainNode, error) { return nodes[id], nil })
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("Chain(%s) (-want +got):\n%s", tt.id, diff)
			}
		})
	}
}

func TestDeltaRequestValidate(t *testing.T) {
	ref := saver.CheckpointRef{Tenant: "t", ThreadID: "thread", ID: "0009"}
	many := make([]string, saver.MaxDeltaChannels+1)
	for i := range many {
		many[i] = string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	tests := []struct {
		name     string
		channels []string
		known    string
		code     string
	}{
		{"None", nil, "", ""},
		{"Some", []string{"messages", "notes"}, "", ""},
		{"Empty", []string{""}, "", saver.EINVALID},
		{"Twice", []string{"a", "a"}, "", saver.EINVALID},
		{"TooMany", many, "", saver.ETOOLARGE},
		{"NotUTF8", []string{"\xff"}, "", saver.EINVALID},
		{"Known", []string{"a"}, "0008", ""},
		{"KnownIsTarget", []string{"a"}, "0009", saver.EINVALID},
		{"KnownNotUTF8", []string{"a"}, "\xff", saver.EINVALID},
		{"KnownTooLong", []string{"a"}, strings.Repeat("k", saver.MaxIDBytes+1), saver.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := saver.DeltaRequest{CheckpointRef: ref, Channels: tt.channels, Known: tt.known}
			if got := saver.ErrorCode(in.Validate()); got != tt.code {
				t.Fatalf("Validate code = %q, want %q", got, tt.code)
			}
		})
	}
}

// TestDeltaWalkLimit reads a history in pages, as the clients do: each
// page's Next is the target of the next request for the channels that go
// on, and the pages put together are the whole history.
func TestDeltaWalkLimit(t *testing.T) {
	// Checkpoints 0 (root) .. 9; a holds a value at 2, b at none.
	type node struct {
		writes []saver.Write
		values map[string]*saver.Typed
	}
	nodes := make([]node, 10)
	for i := range nodes {
		for _, ch := range []string{"a", "b"} {
			nodes[i].writes = append(nodes[i].writes, saver.Write{TaskID: "t", Channel: ch, Idx: int64(len(nodes[i].writes)), Value: saver.Typed{Type: "bytes", Data: make([]byte, 100)}})
		}
	}
	nodes[2].values = map[string]*saver.Typed{"a": {Type: "bytes", Data: []byte("seed")}}
	id := func(i int) string { return string(rune('0' + i)) }
	history := func(target int, channels []string, limit int64) map[string]*saver.DeltaHistory {
		w := saver.NewDeltaWalk(channels)
		w.Limit(limit)
		for i := target - 1; i >= 0; i-- {
			if !w.Visit(id(i), nodes[i].writes, func(ch string) *saver.Typed { return nodes[i].values[ch] }) {
				break
			}
		}
		h, err := w.Result()
		if err != nil {
			t.Fatalf("Result: %v", err)
		}
		return h
	}
	whole := history(9, []string{"a", "b"}, 0)
	for _, limit := range []int64{1, 150, 250, 500, 1 << 20} {
		got := map[string]*saver.DeltaHistory{}
		target, channels, requests := 9, []string{"a", "b"}, 0
		for len(channels) > 0 {
			requests++
			var next []string
			for ch, h := range history(target, channels, limit) {
				if got[ch] == nil {
					got[ch] = &saver.DeltaHistory{Writes: []saver.Write{}}
				}
				got[ch].Writes = append(append([]saver.Write{}, h.Writes...), got[ch].Writes...)
				got[ch].Seed = h.Seed
				if h.Next != "" {
					next = append(next, ch)
					target = int(h.Next[0] - '0')
				}
			}
			channels = next
		}
		if diff := cmp.Diff(whole, got); diff != "" {
			t.Errorf("limit %d: pages differ from the whole history (-whole +pages):\n%s", limit, diff)
		}
		if limit == 1 && requests != 10 {
			// A page cannot tell the root has no parent: one more finds it.
			t.Errorf("limit 1: %d requests, want one per ancestor and one past the root (10)", requests)
		}
		if limit == 1<<20 && requests != 1 {
			t.Errorf("limit over the history: %d requests, want 1", requests)
		}
	}
}
