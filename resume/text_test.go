package resume_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver/resume"
	"github.com/saver-dev/saver/tree"
)

func TestText(t *testing.T) {
	human := resume.Message{Role: "human", ID: "h1", Text: "What is 2+2?"}
	ai := resume.Message{Role: "ai", ID: "a1", Text: "It is 4."}
	wrote := func(channel string, ms ...resume.Message) resume.Wrote {
		return resume.Wrote{Channel: channel, Value: "…", Messages: ms}
	}
	step := func(n int64, source string, status tree.Status, tasks ...resume.Task) resume.Step {
		return resume.Step{Step: n, Source: source, Status: status, Tasks: tasks}
	}
	tests := []struct {
		name string
		c    resume.Context
		want string
	}{
		{"Empty", resume.Context{}, ""},
		// "loop" and "ok" go without saying; other sources and statuses
		// are said, and a step's tasks follow it on its line.
		{"SourceAndStatus", resume.Context{Steps: []resume.Step{
			step(-1, "input", tree.StatusOK, resume.Task{Node: "__start__", Writes: []resume.Wrote{wrote("messages", human)}}),
			step(0, "loop", tree.StatusRetried, resume.Task{Node: "agent", Error: "ValueError('429')", Writes: []resume.Wrote{wrote("messages", ai)}}),
			step(1, "loop", tree.StatusResumed, resume.Task{Node: "ask", Interrupt: `"Approve?"`, Writes: []resume.Wrote{{Channel: "approved", Value: "true"}}}),
			step(2, "fork", tree.StatusInterrupted, resume.Task{Node: "ask", Interrupt: `"Approve?"`}),
		}}, "step -1 · input: __start__ wrote messages: human: What is 2+2?\n" +
			"step 0 · error, retried: agent failed: ValueError('429'); then wrote messages: ai: It is 4.\n" +
			"step 1 · interrupted, resumed: ask paused: \"Approve?\"; then wrote approved: true\n" +
			"step 2 · fork · interrupted: ask paused: \"Approve?\"\n"},
		// LangGraph's exit-mode stub checkpoint has no source.
		{"NoSource", resume.Context{Steps: []resume.Step{step(-2, "", tree.StatusOK)}}, "step -2 · -\n"},
		// Several tasks, several writes: one line still.
		{"Tasks", resume.Context{Steps: []resume.Step{step(3, "update", tree.StatusOK,
			resume.Task{Node: "update_state", Writes: []resume.Wrote{wrote("messages", human)}},
			resume.Task{Node: "pay", Writes: []resume.Wrote{{Channel: "receipt", Value: `{"id":"ch_1"}`}, {Channel: "log", Value: `["paid"]`}}},
		)}}, "step 3 · update: update_state wrote messages: human: What is 2+2?; pay wrote receipt: {\"id\":\"ch_1\"}; log: [\"paid\"]\n"},
		// What an agent asked for follows what it said.
		{"ToolCalls", resume.Context{Steps: []resume.Step{step(0, "loop", tree.StatusOK, resume.Task{Node: "agent", Writes: []resume.Wrote{wrote("messages",
			resume.Message{Role: "ai", Text: "Looking it up.", ToolCalls: []string{`search({"q":"tides"})`, `clock({})`}})}}),
		}}, "step 0: agent wrote messages: ai: Looking it up. → search({\"q\":\"tides\"}) → clock({})\n"},
		// A subgraph returns the conversation it was given with what it
		// added: only what it added is shown; a write of nothing new says
		// how many it repeated. A message replaced under its id is new, and
		// messages without an id are never taken for one another.
		{"MessagesOnce", resume.Context{Steps: []resume.Step{
			step(0, "loop", tree.StatusOK, resume.Task{Node: "plan", Writes: []resume.Wrote{wrote("messages", human, ai)}}),
			step(1, "loop", tree.StatusOK, resume.Task{Node: "research", Writes: []resume.Wrote{wrote("messages", human, ai, resume.Message{Role: "ai", ID: "a2", Text: "Found it."})}}),
			step(2, "loop", tree.StatusOK, resume.Task{Node: "echo", Writes: []resume.Wrote{wrote("messages", human, ai)}}),
			step(3, "loop", tree.StatusOK, resume.Task{Node: "edit", Writes: []resume.Wrote{wrote("messages",
				resume.Message{Role: "ai", ID: "a1", Text: "It is four."}, resume.Message{Role: "tool", Text: "ok"}, resume.Message{Role: "tool", Text: "ok"})}}),
		}}, "step 0: plan wrote messages: human: What is 2+2? | ai: It is 4.\n" +
			"step 1: research wrote messages: ai: Found it.\n" +
			"step 2: echo wrote messages: (2 shown above)\n" +
			"step 3: edit wrote messages: ai: It is four. | tool: ok | tool: ok\n"},
		// An abandoned branch is one line at its fork point, without ids.
		{"Abandoned", resume.Context{Steps: []resume.Step{{Step: 1, Source: "loop", Status: tree.StatusOK, Abandoned: []resume.Abandoned{
			{From: "1f0a", Checkpoints: 2, Status: tree.StatusError, Error: "ValueError('boom')"},
			{From: "1f0b", Checkpoints: 1, Status: tree.StatusOK},
		}}}}, "step 1\n" +
			"  abandoned: 2 checkpoints, error: ValueError('boom')\n" +
			"  abandoned: 1 checkpoint, ok\n"},
		{"LeftOut", resume.Context{LeftOut: 3, Steps: []resume.Step{step(4, "loop", tree.StatusError)}}, "… 3 earlier steps left out\nstep 4 · error\n"},
		// A message's line breaks stay inside its line.
		{"Multiline", resume.Context{Steps: []resume.Step{step(0, "loop", tree.StatusOK, resume.Task{Node: "agent", Writes: []resume.Wrote{wrote("messages",
			resume.Message{Role: "ai", ID: "a", Text: "one\ntwo"})}})}}, "step 0: agent wrote messages: ai: one ⏎ two\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.c.Text()); diff != "" {
				t.Errorf("Text (-want +got):\n%s", diff)
			}
		})
	}
}
