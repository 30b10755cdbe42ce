package valueview

import (
	"unicode/utf8"

	"github.com/saver-dev/saver"
)

// Checkpoint is a checkpoint's channel values and pending writes decoded
// for a person to read (the /ui page, `saver inspect --values`): each value
// rendered within the Limits, and the messages it holds as a conversation.
// Everything in it is text taken from stored values: whoever shows it must
// escape it for where it goes.
type Checkpoint struct {
	ThreadID string  `json:"thread_id" msgpack:"thread_id"`
	NS       string  `json:"checkpoint_ns" msgpack:"checkpoint_ns"`
	ID       string  `json:"checkpoint_id" msgpack:"checkpoint_id"`
	Values   []Shown `json:"values" msgpack:"values"`
	Writes   []Shown `json:"writes" msgpack:"writes"`
}

// Shown is one channel value or one pending write.
type Shown struct {
	Channel string `json:"channel" msgpack:"channel"`
	// Version is a channel value's version; TaskID, TaskPath and Idx a
	// write's task and position.
	Version  string `json:"version,omitempty" msgpack:"version,omitempty"`
	TaskID   string `json:"task_id,omitempty" msgpack:"task_id,omitempty"`
	TaskPath string `json:"task_path,omitempty" msgpack:"task_path,omitempty"`
	Idx      int64  `json:"idx" msgpack:"idx"`
	// Type and Bytes are the stored value's type tag and size.
	Type  string `json:"type" msgpack:"type"`
	Bytes int    `json:"bytes" msgpack:"bytes"`
	// Value is the rendering (Render), at most Limits.Bytes long. A value
	// the service cannot read is named by type and size: <msgpack+aes, 120 bytes>.
	Value string `json:"value" msgpack:"value"`
	// Messages are the chat messages the value holds, in order.
	Messages []ShownMessage `json:"messages,omitempty" msgpack:"messages,omitempty"`
}

// ShownMessage is one message of a conversation: its role, id, text (cut
// at Limits.Bytes) and tool calls, each rendered as name(args).
type ShownMessage struct {
	Role      string   `json:"role" msgpack:"role"`
	ID        string   `json:"id,omitempty" msgpack:"id,omitempty"`
	Text      string   `json:"text" msgpack:"text"`
	ToolCalls []string `json:"tool_calls,omitempty" msgpack:"tool_calls,omitempty"`
}

// ShowCheckpoint decodes t's values and writes within lim.
func ShowCheckpoint(t *saver.Tuple, lim Limits) Checkpoint {
	out := Checkpoint{ThreadID: t.ThreadID, NS: t.NS, ID: t.ID, Values: []Shown{}, Writes: []Shown{}}
	for _, b := range t.Values {
		s := show(b.Value, lim)
		s.Channel, s.Version = b.Channel, b.Version
		out.Values = append(out.Values, s)
	}
	for _, w := range t.Writes {
		s := show(w.Value, lim)
		s.Channel, s.TaskID, s.TaskPath, s.Idx = w.Channel, w.TaskID, w.TaskPath, w.Idx
		out.Writes = append(out.Writes, s)
	}
	return out
}

func show(t saver.Typed, lim Limits) Shown {
	v := Decode(t, lim)
	s := Shown{Type: t.Type, Bytes: len(t.Data), Value: Render(v, lim.Bytes)}
	for _, m := range Messages(v) {
		sm := ShownMessage{Role: m.Role, ID: m.ID, Text: clip(m.Text, lim.Bytes)}
		for _, c := range m.ToolCalls {
			sm.ToolCalls = append(sm.ToolCalls, RenderCall(c, lim.Bytes))
		}
		s.Messages = append(s.Messages, sm)
	}
	return s
}

// clip keeps s within most bytes (most < 1: whole), ending it with the
// ellipsis on a rune boundary.
func clip(s string, most int) string {
	if most < 1 || len(s) <= most {
		return s
	}
	n := most - len(ellipsis)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:max(n, 0)] + ellipsis
}
