package resume

import (
	"strconv"
	"strings"

	"github.com/saver-dev/saver/tree"
)

// Text renders c for a prompt, one line per live-path step: its heading
// (tree.Heading: source and status only where they say something), then
// what ran from it (what failed, what paused, what it wrote: messages as
// role and text and their tool calls, other values as compact JSON), then
// one line per branch abandoned there:
//
//	step -1 · input: __start__ wrote messages: human: What is 2+2?
//	step 0 · error, retried: agent failed: ValueError('rate limited'); then wrote messages: ai: 4
//	step 1
//	  abandoned: 2 checkpoints, error: ValueError('boom')
//	step 1 · fork: agent wrote messages: ai: It is 4.
//	step 2
//
// Each message is shown once: a later write or update that repeats one
// already shown (a subgraph returning the conversation it was given) shows
// only the messages that are new. The structured Context keeps them all.
func (c *Context) Text() string {
	var sb strings.Builder
	if c.LeftOut > 0 {
		sb.WriteString("… " + strconv.Itoa(c.LeftOut) + " earlier steps left out\n")
	}
	shown := make(map[string]bool) // messages already in the text, by shownKey
	for _, s := range c.Steps {
		sb.WriteString(tree.Heading(s.Step, s.Source, s.Status))
		for i, t := range s.Tasks {
			if i == 0 {
				sb.WriteString(": ")
			} else {
				sb.WriteString("; ")
			}
			task(&sb, t, shown)
		}
		sb.WriteByte('\n')
		for _, a := range s.Abandoned {
			sb.WriteString("  abandoned: " + strconv.Itoa(a.Checkpoints) + " checkpoint")
			if a.Checkpoints != 1 {
				sb.WriteString("s")
			}
			sb.WriteString(", " + string(a.Status))
			if a.Error != "" {
				sb.WriteString(": " + a.Error)
			}
			sb.WriteByte('\n')
		}
	}
	return sb.String()
}

// task writes what one task did, on its step's line.
func task(sb *strings.Builder, t Task, shown map[string]bool) {
	sb.WriteString(t.Node)
	sep := " "
	if t.Error != "" {
		sb.WriteString(" failed: " + t.Error)
		sep = "; then "
	}
	if t.Interrupt != "" {
		sb.WriteString(sep + "paused: " + t.Interrupt)
		sep = "; then "
	}
	for i, w := range t.Writes {
		if i == 0 {
			sb.WriteString(sep + "wrote ")
		} else {
			sb.WriteString("; ")
		}
		sb.WriteString(w.Channel + ": ")
		if len(w.Messages) == 0 {
			sb.WriteString(w.Value)
			continue
		}
		n := 0
		for _, m := range w.Messages {
			k := shownKey(m)
			if k != "" {
				if shown[k] {
					continue
				}
				shown[k] = true
			}
			if n > 0 {
				sb.WriteString(" | ")
			}
			n++
			sb.WriteString(m.Role + ": " + oneLine(m.Text))
			for _, c := range m.ToolCalls {
				sb.WriteString(" → " + oneLine(c))
			}
		}
		if n == 0 {
			sb.WriteString("(" + strconv.Itoa(len(w.Messages)) + " shown above)")
		}
	}
}

// shownKey identifies a message for showing it once: its id with what the
// text would say of it, so that a message add_messages replaced (same id,
// new text) is shown again. A message without an id has no key: nothing
// says a like one is the same message.
func shownKey(m Message) string {
	if m.ID == "" {
		return ""
	}
	return m.ID + "\x00" + m.Role + "\x00" + m.Text + "\x00" + strings.Join(m.ToolCalls, "\x00")
}

// oneLine keeps a message on its line.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ⏎ ") }
