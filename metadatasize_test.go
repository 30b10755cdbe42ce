package saver_test

import (
	"strings"
	"testing"

	"github.com/saver-dev/saver"
)

// TestMetadataLimits: metadata of four million empty maps was stored and
// then decoded by every read of its thread. A put's metadata, and a filter,
// are held to MaxMetadataValues and MaxMetadataBytes; what LangGraph writes
// is far within them.
func TestMetadataLimits(t *testing.T) {
	many := func(n int, v func() any) map[string]any {
		m := map[string]any{}
		for i := 0; i < n; i++ {
			m[strings.Repeat("k", 1+i%7)+string(rune('a'+i%26))+string(rune(0x100+i))] = v()
		}
		return m
	}
	emptyMaps := make([]any, saver.MaxMetadataValues)
	for i := range emptyMaps {
		emptyMaps[i] = map[string]any{}
	}
	tests := []struct {
		name string
		md   saver.Metadata
		ok   bool
	}{
		{"LangGraph", saver.Metadata{
			"source": "loop", "step": 3, "run_id": "1f0c0a9e-7a3b-6b1e-8000-3c2f0b1d9e4a", "thread_id": "t",
			"parents":                       map[string]any{"": "1f0c0a9e-7a3b-6b1e-8000-3c2f0b1d9e4a", "sub:1": "1f0c0a9e-7a3b-6b1e-8001-3c2f0b1d9e4a"},
			"counters_since_delta_snapshot": map[string]any{"messages": 12, "notes": 3},
			"user_id":                       "u", "score": 0.5, "ok": true,
		}, true},
		{"ValuesAtTheLimit", saver.Metadata{"a": emptyMaps[:saver.MaxMetadataValues-2]}, true},
		{"EmptyMapsOverTheLimit", saver.Metadata{"a": emptyMaps}, false},
		{"ScalarsOverTheLimit", saver.Metadata(many(saver.MaxMetadataValues, func() any { return 1 })), false},
		{"StringOfALimit", saver.Metadata{"a": strings.Repeat("x", saver.MaxMetadataBytes-200)}, true},
		{"StringOverTheLimit", saver.Metadata{"a": strings.Repeat("x", saver.MaxMetadataBytes)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			put := saver.PutCheckpoint{Checkpoint: saver.Checkpoint{
				CheckpointRef: saver.CheckpointRef{ThreadID: "t", ID: "c1"},
				Body:          saver.Typed{Type: "msgpack"},
				Metadata:      tt.md,
			}}
			err := put.Validate()
			if (err == nil) != tt.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
			if err != nil {
				if got, want := saver.ErrorCode(err), saver.ETOOLARGE; got != want {
					t.Fatalf("code=%q, want %q", got, want)
				}
				if !strings.HasPrefix(saver.ErrorMessage(err), "metadata ") {
					t.Fatalf("the message does not name metadata: %s", saver.ErrorMessage(err))
				}
			}
			f := saver.ListFilter{Metadata: tt.md}
			if err := f.Validate(); (err == nil) != tt.ok {
				t.Fatalf("filter: Validate() = %v, want ok=%v", err, tt.ok)
			} else if err != nil && !strings.HasPrefix(saver.ErrorMessage(err), "filter ") {
				t.Fatalf("the message does not name the filter: %s", saver.ErrorMessage(err))
			}
		})
	}
}

// TestNormalizeMetadataInPlace: normalising decoded metadata converts the
// maps and lists inside it where they are, rather than copying the tree,
// which doubled what a large one took.
func TestNormalizeMetadataInPlace(t *testing.T) {
	inner := map[string]any{"n": int8(1)}
	list := []any{uint16(7), inner}
	md := saver.Metadata{"l": list}
	if err := saver.NormalizeMetadata(md); err != nil {
		t.Fatal(err)
	}
	if got, ok := list[0].(int64); !ok || got != 7 {
		t.Fatalf("list[0] = %#v, want int64(7) in the same list", list[0])
	}
	if got, ok := inner["n"].(int64); !ok || got != 1 {
		t.Fatalf(`inner["n"] = %#v, want int64(1) in the same map`, inner["n"])
	}
}
