package saver_test

import (
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
			if diff := cmp.Diff(tt.want, saver.Chain(nodes, tt.id)); diff != "" {
				t.Fatalf("Chain(%s) (-want +got):\n%s", tt.id, diff)
			}
		})
	}
}

func TestDeltaRequestValidate(t *testing.T) {
	ref := saver.CheckpointRef{Tenant: "t", ThreadID: "thread"}
	many := make([]string, saver.MaxDeltaChannels+1)
	for i := range many {
		many[i] = string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	tests := []struct {
		name     string
		channels []string
		code     string
	}{
		{"None", nil, ""},
		{"Some", []string{"messages", "notes"}, ""},
		{"Empty", []string{""}, saver.EINVALID},
		{"Twice", []string{"a", "a"}, saver.EINVALID},
		{"TooMany", many, saver.ETOOLARGE},
		{"NotUTF8", []string{"\xff"}, saver.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := saver.DeltaRequest{CheckpointRef: ref, Channels: tt.channels}
			if got := saver.ErrorCode(in.Validate()); got != tt.code {
				t.Fatalf("Validate code = %q, want %q", got, tt.code)
			}
		})
	}
}
