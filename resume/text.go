package resume

import (
	"strconv"
	"strings"
)

// Text renders c for a prompt: one line per live-path step, then one per
// task run from it (what failed, what paused, what it wrote: messages as
// role and text, other values as compact JSON), then one per branch
// abandoned there:
//
//	step -1 · input · ok
//	  __start__ wrote messages: human: What is 2+2?
//	step 0 · loop · error, retried
//	  agent failed: ValueError('rate limited'); then wrote messages: ai: 4
//	step 1 · loop · ok
//	  abandoned: 2 checkpoints from 1f0…, error: ValueError('boom')
func (c *Context) Text() string {
	var sb strings.Builder
	if c.LeftOut > 0 {
		sb.WriteString("… " + strconv.Itoa(c.LeftOut) + " earlier steps left out\n")
	}
	for _, s := range c.Steps {
		source := s.Source
		if source == "" {
			source = "-"
		}
		sb.WriteString("step " + strconv.FormatInt(s.Step, 10) + " · " + source + " · " + phrase(string(s.Status)) + "\n")
		for _, t := range s.Tasks {
			sb.WriteString("  " + t.Node)
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
				}
				for j, m := range w.Messages {
					if j > 0 {
						sb.WriteString(" | ")
					}
					sb.WriteString(m.Role + ": " + oneLine(m.Text))
				}
			}
			sb.WriteByte('\n')
		}
		for _, a := range s.Abandoned {
			sb.WriteString("  abandoned: " + strconv.Itoa(a.Checkpoints) + " checkpoint")
			if a.Checkpoints != 1 {
				sb.WriteString("s")
			}
			sb.WriteString(" from " + a.From + ", " + string(a.Status))
			if a.Error != "" {
				sb.WriteString(": " + a.Error)
			}
			sb.WriteByte('\n')
		}
	}
	return sb.String()
}

// phrase is how a status reads: a failed attempt reads as the error it was,
// then what happened next.
func phrase(s string) string {
	switch s {
	case "retried":
		return "error, retried"
	case "resumed":
		return "interrupted, resumed"
	}
	return s
}

// oneLine keeps a message on its line.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ⏎ ") }
