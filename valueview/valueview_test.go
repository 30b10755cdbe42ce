package valueview_test

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/valueview"
)

// fixtures reads testdata/serialized.json, written by testdata/gen.py with
// LangGraph's own serializer.
func fixtures(tb testing.TB) map[string]saver.Typed {
	tb.Helper()
	b, err := os.ReadFile("testdata/serialized.json")
	if err != nil {
		tb.Fatal(err)
	}
	var rows []struct{ Name, Type, Data string }
	if err := json.Unmarshal(b, &rows); err != nil {
		tb.Fatal(err)
	}
	out := make(map[string]saver.Typed, len(rows))
	for _, r := range rows {
		data, err := base64.StdEncoding.DecodeString(r.Data)
		if err != nil {
			tb.Fatal(err)
		}
		out[r.Name] = saver.Typed{Type: r.Type, Data: data}
	}
	return out
}

// TestRenderLangGraph renders values as LangGraph's serializer wrote them.
func TestRenderLangGraph(t *testing.T) {
	want := map[string]string{
		"none":         `null`,
		"bytes":        `<bytes, 3 bytes>`,
		"int":          `42`,
		"negative":     `-7`,
		"big":          `18446744073709551615`,
		"float":        `1.5`,
		"str":          `"héllo \"quoted\"\n"`,
		"list":         `[1,"two",null,true]`,
		"dict":         `{"a":1,"b":[1,2]}`,
		"int_keys":     `{1:"one",2:"two"}`,
		"tuple":        `[1,2]`,
		"set":          `set[3]`,
		"frozenset":    `frozenset["x"]`,
		"deque":        `deque[1,2]`,
		"datetime":     `datetime("2024-05-01T12:30:00+00:00")`,
		"date":         `date(2024,5,1)`,
		"uuid":         `UUID("12345678123456781234567812345678")`,
		"enum":         `Color("red")`,
		"dataclass":    `Order{"id":7,"items":["tea"]}`,
		"namedtuple":   `Point{"x":1,"y":2}`,
		"pydantic":     `Profile{"name":"ada","tags":set["x"]}`,
		"send":         `Send("work",{"x":1})`,
		"human":        `HumanMessage("What is 2+2?")`,
		"ai_tool_call": `AIMessage("",→calc{"expr":"2+2"})`,
		"tool":         `ToolMessage("4")`,
		"messages":     `[SystemMessage("Be brief."),AIMessage("It is 4.")]`,
		"remove":       `RemoveMessage("")`,
		"nested":       `{"state":{"messages":[HumanMessage("hi")],"count":1}}`,
	}
	fx := fixtures(t)
	if len(fx) != len(want) {
		t.Fatalf("%d fixtures, %d expectations", len(fx), len(want))
	}
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			got := valueview.Render(valueview.Decode(fx[name], valueview.DefaultLimits), 0)
			if got != w {
				t.Errorf("Render = %s, want %s", got, w)
			}
		})
	}
}

// TestRenderOpaque: what the service cannot read is named by type and
// size, never guessed at.
func TestRenderOpaque(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   saver.Typed
		want string
	}{
		{"encrypted", saver.Typed{Type: "msgpack+aes", Data: []byte{1, 2, 3, 4}}, `<msgpack+aes, 4 bytes>`},
		{"pickle", saver.Typed{Type: "pickle", Data: []byte{0x80, 4}}, `<pickle, 2 bytes>`},
		{"truncated msgpack", saver.Typed{Type: "msgpack", Data: []byte{0x92, 1}}, `<msgpack, 2 bytes>`},
		{"trailing data", saver.Typed{Type: "msgpack", Data: []byte{1, 2}}, `<msgpack, 2 bytes>`},
		{"never-used byte", saver.Typed{Type: "msgpack", Data: []byte{0xc1}}, `<msgpack, 1 byte>`},
		{"array claiming 2^32-1", saver.Typed{Type: "msgpack", Data: []byte{0xdd, 0xff, 0xff, 0xff, 0xff, 1}}, `<msgpack, 6 bytes>`},
		{"unknown ext", saver.Typed{Type: "msgpack", Data: []byte{0xd4, 42, 0}}, `<msgpack ext 42, 1 byte>`},
		{"ext that is not (module, name, arg)", saver.Typed{Type: "msgpack", Data: []byte{0xd4, 0, 1}}, `<msgpack ext 0, 1 byte>`},
		{"bad json", saver.Typed{Type: "json", Data: []byte(`{"a":`)}, `<json, 5 bytes>`},
		{"empty blob", saver.Typed{Type: saver.EmptyType}, `null`},
		{"msgpack timestamp", saver.Typed{Type: "msgpack", Data: []byte{0xd6, 0xff, 0, 0, 0, 1}}, `datetime("1970-01-01T00:00:01Z")`},
		{"nan", saver.Typed{Type: "msgpack", Data: []byte{0xcb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 1}}, `NaN`},
		{"json", saver.Typed{Type: "json", Data: []byte(`{"b":[1.5,"x"],"a":null}`)}, `{"a":null,"b":[1.5,"x"]}`},
		{"json langchain constructor", saver.Typed{Type: "json", Data: []byte(
			`{"lc":1,"type":"constructor","id":["langchain","schema","messages","AIMessage"],"kwargs":{"content":"hey","type":"ai"}}`)},
			`AIMessage("hey")`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := valueview.Render(valueview.Decode(tt.in, valueview.DefaultLimits), 0); got != tt.want {
				t.Errorf("Render = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestLimits: each limit cuts where it says, and says how much it cut.
func TestLimits(t *testing.T) {
	fx := fixtures(t)
	for _, tt := range []struct {
		name string
		in   string
		lim  valueview.Limits
		want string
	}{
		{"items", "list", valueview.Limits{Depth: 8, Items: 3}, `[1,"two",… 2 more]`},
		{"map items", "dict", valueview.Limits{Depth: 8, Items: 2}, `{"a":1,… 1 more}`},
		{"depth", "nested", valueview.Limits{Depth: 2, Items: 100}, `{"state":{"messages":… 1 more,"count":1}}`},
		{"bytes", "str", valueview.Limits{Depth: 8, Items: 100, Bytes: 7}, `"hé…`},
		{"bytes on a rune", "str", valueview.Limits{Depth: 8, Items: 100, Bytes: 6}, `"h…`},
		{"bytes in a container", "messages", valueview.Limits{Depth: 8, Items: 100, Bytes: 24}, `[SystemMessage("Be br…`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := valueview.Render(valueview.Decode(fx[tt.in], tt.lim), tt.lim.Bytes)
			if got != tt.want {
				t.Errorf("Render = %s, want %s", got, tt.want)
			}
			if tt.lim.Bytes > 0 && len(got) > tt.lim.Bytes {
				t.Errorf("%d bytes, limit %d", len(got), tt.lim.Bytes)
			}
		})
	}
}

func TestMessages(t *testing.T) {
	fx := fixtures(t)
	type msg struct {
		Role, ID, Text string
		Calls          []string
	}
	for _, tt := range []struct {
		in   string
		want []msg
	}{
		{"human", []msg{{"human", "h1", "What is 2+2?", nil}}},
		{"ai_tool_call", []msg{{"ai", "a1", "", []string{"calc"}}}},
		{"tool", []msg{{"tool", "t1", "4", nil}}},
		{"messages", []msg{{"system", "s1", "Be brief.", nil}, {"ai", "a2", "It is 4.", nil}}},
		{"remove", []msg{{"remove", "a1", "", nil}}},
		{"dict", nil},
		{"send", nil},
	} {
		t.Run(tt.in, func(t *testing.T) {
			var got []msg
			for _, m := range valueview.Messages(valueview.Decode(fx[tt.in], valueview.DefaultLimits)) {
				g := msg{Role: m.Role, ID: m.ID, Text: m.Text}
				for _, c := range m.ToolCalls {
					g.Calls = append(g.Calls, c.Name)
				}
				got = append(got, g)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Messages (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMessageJSON: a message's fields come back as LangChain's dict form
// takes them.
func TestMessageJSON(t *testing.T) {
	m := valueview.Messages(valueview.Decode(fixtures(t)["ai_tool_call"], valueview.DefaultLimits))[0]
	b, err := json.Marshal(m.Data.JSON())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got["type"] != "ai" || got["id"] != "a1" {
		t.Errorf("fields %s", b)
	}
	calls, _ := got["tool_calls"].([]any)
	if len(calls) != 1 || calls[0].(map[string]any)["name"] != "calc" {
		t.Errorf("tool_calls in %s", b)
	}
}
