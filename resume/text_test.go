package resume_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver/resume"
	"github.com/saver-dev/saver/tree"
)

// TestTextToolCalls: an AI message's tool calls follow its text, so the
// context says what the agent asked for, not only what it said.
func TestTextToolCalls(t *testing.T) {
	c := &resume.Context{Steps: []resume.Step{{Step: 0, Source: "loop", Status: tree.StatusOK, Tasks: []resume.Task{{
		Node: "agent",
		Writes: []resume.Wrote{{Channel: "messages", Messages: []resume.Message{
			{Role: "ai", Text: "Looking it up.", ToolCalls: []string{`search({"q":"tides"})`, `clock({})`}},
		}}},
	}}}}}
	want := "step 0 · loop · ok\n" +
		"  agent wrote messages: ai: Looking it up. → search({\"q\":\"tides\"}) → clock({})\n"
	if diff := cmp.Diff(want, c.Text()); diff != "" {
		t.Errorf("Text (-want +got):\n%s", diff)
	}
}
