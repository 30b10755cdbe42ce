package valueview_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/valueview"
)

// TestShowCheckpoint: a checkpoint's values and writes as a page shows
// them, messages as a conversation, unreadable values by type and size,
// every rendering within the byte limit.
func TestShowCheckpoint(t *testing.T) {
	fx := fixtures(t)
	tup := &saver.Tuple{
		Checkpoint: saver.Checkpoint{CheckpointRef: saver.CheckpointRef{ThreadID: "t", ID: "c1"}},
		Values: []saver.Blob{
			{Channel: "messages", Version: "3", Value: fx["messages"]},
			{Channel: "secret", Version: "1", Value: saver.Typed{Type: "msgpack+aes", Data: make([]byte, 120)}},
			{Channel: "long", Version: "2", Value: saver.Typed{Type: "json", Data: []byte(`"` + strings.Repeat("x", 500) + `"`)}},
		},
		Writes: []saver.Write{
			{TaskID: "k", TaskPath: "~__pregel_pull, agent", Idx: 0, Channel: "messages", Value: fx["ai_tool_call"]},
		},
	}
	got := valueview.ShowCheckpoint(tup, valueview.Limits{Depth: 16, Items: 2000, Bytes: 64})
	want := valueview.Checkpoint{
		ThreadID: "t", ID: "c1",
		Values: []valueview.Shown{
			{Channel: "messages", Version: "3", Type: "msgpack", Bytes: len(fx["messages"].Data),
				Value:    `[SystemMessage("Be brief."),AIMessage("It is 4.")]`,
				Messages: []valueview.ShownMessage{{Role: "system", ID: "s1", Text: "Be brief."}, {Role: "ai", ID: "a2", Text: "It is 4."}}},
			{Channel: "secret", Version: "1", Type: "msgpack+aes", Bytes: 120, Value: "<msgpack+aes, 120 bytes>"},
			{Channel: "long", Version: "2", Type: "json", Bytes: 502, Value: `"` + strings.Repeat("x", 60) + "…"},
		},
		Writes: []valueview.Shown{
			{Channel: "messages", TaskID: "k", TaskPath: "~__pregel_pull, agent", Type: "msgpack", Bytes: len(fx["ai_tool_call"].Data),
				Value:    `AIMessage("",→calc{"expr":"2+2"})`,
				Messages: []valueview.ShownMessage{{Role: "ai", ID: "a1", ToolCalls: []string{`calc({"expr":"2+2"})`}}}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ShowCheckpoint (-want +got):\n%s", diff)
	}
	for _, s := range append(got.Values, got.Writes...) {
		if len(s.Value) > 64 {
			t.Errorf("%s: rendering of %d bytes, over the limit", s.Channel, len(s.Value))
		}
	}
}
