package valueview

import (
	"math"
	"strconv"
	"strings"
)

// Message is a LangChain chat message found in a value.
type Message struct {
	// Role is the message's LangChain type: "human", "ai", "system",
	// "tool", "function", "chat", or "remove" for a RemoveMessage.
	Role string
	// ID is the message id; "" when it has none.
	ID string
	// Text is the message's text: its content when that is a string, or
	// the text of its content blocks, other blocks named by their type.
	Text string
	// ToolCalls are the tool calls of an AI message, by name.
	ToolCalls []ToolCall
	// Data is the message's fields (the constructor's keyword arguments).
	Data Value
}

// ToolCall is one tool call of an AI message.
type ToolCall struct {
	Name string
	ID   string
	Args Value
}

// roles maps message classes to roles, for messages whose fields lack a type.
var roles = map[string]string{
	"HumanMessage": "human", "HumanMessageChunk": "human",
	"AIMessage": "ai", "AIMessageChunk": "ai",
	"SystemMessage": "system", "SystemMessageChunk": "system",
	"ToolMessage": "tool", "ToolMessageChunk": "tool",
	"FunctionMessage": "function", "FunctionMessageChunk": "function",
	"ChatMessage": "chat", "ChatMessageChunk": "chat",
	"RemoveMessage": "remove",
}

// AsMessage returns v as a message if it is one: an object of a
// langchain_core.messages class whose fields hold content.
func AsMessage(v Value) (Message, bool) {
	if v.Kind != Object || !strings.HasPrefix(v.Module, "langchain_core.messages") && v.Module != "langchain.schema.messages" {
		return Message{}, false
	}
	content, ok := v.Get("content")
	role := roles[v.Name]
	if !ok || role == "" {
		return Message{}, false
	}
	if t, _ := v.Get("type"); t.Kind == String && !strings.HasSuffix(t.Text, "Chunk") {
		role = t.Text
	}
	id, _ := v.Get("id")
	m := Message{Role: role, ID: id.Str(), Text: text(content), Data: v.Items[0]}
	calls, _ := v.Get("tool_calls")
	for _, c := range calls.Items {
		name, _ := c.Get("name")
		cid, _ := c.Get("id")
		args, _ := c.Get("args")
		m.ToolCalls = append(m.ToolCalls, ToolCall{Name: name.Str(), ID: cid.Str(), Args: args})
	}
	return m, true
}

// text is a message content's text: a string, or the text blocks of a
// list, other blocks named as <type>.
func text(content Value) string {
	if content.Kind == String {
		return content.Text
	}
	var parts []string
	for _, b := range content.Items {
		if b.Kind == String {
			parts = append(parts, b.Text)
			continue
		}
		if t, ok := b.Get("text"); ok && t.Kind == String {
			parts = append(parts, t.Text)
			continue
		}
		typ, _ := b.Get("type")
		parts = append(parts, "<"+typ.Str()+">")
	}
	return strings.Join(parts, "\n")
}

// Messages returns the messages v holds: v itself, or the messages among
// the elements of a list (as a node returns for a messages channel).
func Messages(v Value) []Message {
	if m, ok := AsMessage(v); ok {
		return []Message{m}
	}
	if v.Kind != Array {
		return nil
	}
	var out []Message
	for _, e := range v.Items {
		if m, ok := AsMessage(e); ok {
			out = append(out, m)
		}
	}
	return out
}

// JSON returns v as plain JSON data (nil, bool, int64, uint64, float64, string, []any,
// map[string]any), as LangGraph's own JSON fallback reads an ext: an object
// is its arguments. Map keys that are not strings are rendered as text;
// bytes, opaque values and cuts become their rendering.
func (v Value) JSON() any {
	switch v.Kind {
	case Null:
		return nil
	case Bool:
		return v.Bool
	case Number:
		return number(v.Text)
	case String:
		return v.Text
	case Array:
		out := make([]any, len(v.Items))
		for i, e := range v.Items {
			out[i] = e.JSON()
		}
		return out
	case Map:
		out := make(map[string]any, len(v.Items)/2)
		for i := 0; i+1 < len(v.Items); i += 2 {
			k := v.Items[i].Str()
			if v.Items[i].Kind != String {
				k = Render(v.Items[i], 0)
			}
			out[k] = v.Items[i+1].JSON()
		}
		return out
	case Object:
		if len(v.Items) == 0 {
			return nil
		}
		return v.Items[0].JSON()
	}
	return Render(v, 0)
}

// number is a Number as Go data both JSON and msgpack encode as a number;
// NaN and the infinities, which JSON cannot hold, stay text.
func number(s string) any {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i
	}
	if u, err := strconv.ParseUint(s, 10, 64); err == nil {
		return u
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		return f
	}
	return s
}
