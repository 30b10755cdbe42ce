package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"
)

func TestScanNesting(t *testing.T) {
	for _, tt := range []struct {
		depth int
		ok    bool
	}{{1, true}, {maxNesting, true}, {maxNesting + 1, false}} {
		mp := append(bytes.Repeat([]byte{0x91}, tt.depth), 0xc0)
		if _, err := scanMsgpack(mp, anyShape); (err == nil) != tt.ok {
			t.Errorf("msgpack, %d levels: err=%v, want ok=%v", tt.depth, err, tt.ok)
		}
		js := []byte(strings.Repeat(`{"a":[`, tt.depth/2) + strings.Repeat("[", tt.depth%2) + "1" +
			strings.Repeat("]", tt.depth%2) + strings.Repeat("]}", tt.depth/2))
		if _, err := scanJSON(js, anyShape); (err == nil) != tt.ok {
			t.Errorf("JSON, %d levels: err=%v, want ok=%v", tt.depth, err, tt.ok)
		}
	}
}

type scanTarget struct {
	Name  string            `json:"name" msgpack:"name"`
	Items []scanItem        `json:"items" msgpack:"items"`
	Tags  map[string]string `json:"tags" msgpack:"tags"`
	Ptr   *int              `json:"ptr" msgpack:"ptr"`
	Data  []byte            `json:"data" msgpack:"data"`
	Any   any               `json:"any" msgpack:"any"`
	Skip  string            `json:"-" msgpack:"-"`
	scanEmbedded
}

type scanItem struct {
	ID string `json:"id" msgpack:"id"`
}

type scanEmbedded struct {
	Extra int `json:"extra" msgpack:"extra"`
}

func TestScanShape(t *testing.T) {
	s := shapeOf(reflect.TypeOf(scanTarget{}), "json")
	tests := []struct {
		body string
		ok   bool
	}{
		{`{"name":"n","items":[{"id":"a"},null],"tags":{"x":"y"},"ptr":null,"data":"AQ==","any":[{"k":1}],"extra":2}`, true},
		{`null`, true},
		{`{"Name":"n"}`, false},
		{`{"-":"n"}`, false},
		{`{"Skip":"n"}`, false},
		{`{"items":{"id":"a"}}`, false},
		{`{"items":[{"ID":"a"}]}`, false},
		{`{"items":[["a"]]}`, false},
		{`{"tags":[]}`, false},
		{`{"tags":{"x":"y","x":"z"}}`, false},
		{`{"any":{"k":1,"k":1}}`, false},
		{`[]`, false},
		{`"s"`, false},
		{`{"name":"n"} x`, false},
		{`{"name":"n",}`, false},
		{`{"name" "n"}`, false},
		{`{"name":"a\x"}`, false},
		{"{\"name\":\"a\tb\"}", false},
		{`{"name":tru}`, false},
	}
	for _, tt := range tests {
		if _, err := scanJSON([]byte(tt.body), s); (err == nil) != tt.ok {
			t.Errorf("scanJSON(%s) = %v, want ok=%v", tt.body, err, tt.ok)
		}
	}
	m := shapeOf(reflect.TypeOf(scanTarget{}), "msgpack")
	enc := func(v any) []byte { b, _ := msgpack.Marshal(v); return b }
	for _, tt := range []struct {
		name string
		body []byte
		ok   bool
	}{
		{"Full", enc(map[string]any{"name": "n", "items": []any{map[string]any{"id": "a"}, nil}, "tags": map[string]string{"x": "y"}, "data": []byte{1}, "any": []any{1, "b"}, "extra": 2}), true},
		{"Nil", []byte{0xc0}, true},
		{"CaseMismatch", enc(map[string]any{"Name": "n"}), false},
		{"ItemAsArray", enc(map[string]any{"items": []any{[]any{"a"}}}), false},
		{"TagsAsArray", enc(map[string]any{"tags": []any{}}), false},
		{"StructAsString", enc("s"), false},
		{"IntKeyInTags", []byte{0x81, 0xa4, 't', 'a', 'g', 's', 0x81, 0x01, 0xa1, 'y'}, false},
		{"IntKeysInAny", []byte{0x81, 0xa3, 'a', 'n', 'y', 0x82, 0x01, 0xc0, 0xa1, 0x01, 0xc0}, true},
		{"DuplicateIntKeysInAny", []byte{0x81, 0xa3, 'a', 'n', 'y', 0x82, 0x01, 0xc0, 0x01, 0xc0}, false},
		{"Trailing", append(enc(map[string]any{"name": "n"}), 0xc0), false},
		{"NeverUsedCode", []byte{0xc1}, false},
		{"TruncatedFloat", []byte{0x81, 0xa3, 'a', 'n', 'y', 0xcb, 0, 0}, false},
		{"FixextFits", []byte{0x81, 0xa3, 'a', 'n', 'y', 0xd4, 0x01, 0x00}, true},
		{"FixextShort", []byte{0x81, 0xa3, 'a', 'n', 'y', 0xd8, 0x01, 0x00}, false},
	} {
		if _, err := scanMsgpack(tt.body, m); (err == nil) != tt.ok {
			t.Errorf("%s: scanMsgpack(% x) = %v, want ok=%v", tt.name, tt.body, err, tt.ok)
		}
	}
}

// FuzzScanMsgpack checks the scanner against the library: what the library
// encodes, the scanner accepts, and what the scanner accepts, the decoder
// decodes without a panic.
func FuzzScanMsgpack(f *testing.F) {
	for _, v := range []any{nil, 1, -1, 1.5, "s", []byte{1}, []any{1, "a", nil}, map[string]any{"a": map[string]any{"b": []any{true}}}} {
		b, _ := msgpack.Marshal(v)
		f.Add(b)
	}
	f.Add([]byte{0xdd, 0x7f, 0xff, 0xff, 0xff})
	f.Add([]byte{0xdf, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := scanMsgpack(b, anyShape); err != nil {
			return
		}
		var v any
		if err := msgpack.Unmarshal(b, &v); err != nil {
			return
		}
		again, err := msgpack.Marshal(v)
		if err != nil {
			return // a decoded value the encoder cannot write back (a NaN key)
		}
		if _, err := scanMsgpack(again, anyShape); err != nil {
			t.Fatalf("the scanner refuses the encoding % x of %#v: %v", again, v, err)
		}
	})
}

// FuzzScanJSON checks the scanner against encoding/json: valid UTF-8 JSON within
// the nesting limit, without repeated keys or escapes of lone surrogates, is
// accepted; what the scanner accepts is JSON.
func FuzzScanJSON(f *testing.F) {
	for _, s := range []string{`null`, `1`, `-1.5e3`, `"a\"b\u00e9\ud83d\ude00"`, `[1,[2,{}]]`, `{"a":{"b":[true,false,null]}}`, ` { "a" : 1 } `, `{"a":1,"a":2}`, `"\ud800"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := scanJSON(b, anyShape)
		plain := !bytes.Contains(b, []byte(`\u`)) // lone surrogates are ours to find
		if json.Valid(b) && utf8.Valid(b) && plain && jsonDepth(b) <= maxNesting && !jsonRepeatsKey(b) && err != nil {
			t.Fatalf("scanJSON(%q) = %v for valid JSON", b, err)
		}
		if err == nil && !json.Valid(b) {
			t.Fatalf("scanJSON(%q) accepts what is not JSON", b)
		}
	})
}

func jsonDepth(b []byte) int {
	dec := json.NewDecoder(bytes.NewReader(b))
	depth, max := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return max
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			max = maxInt(max, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// jsonRepeatsKey reports whether an object in b has a key twice.
func jsonRepeatsKey(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	type frame struct {
		keys   map[string]bool
		object bool
		key    bool // the next token in an object is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			if s, ok := tok.(string); ok {
				if top.keys[s] {
					return true
				}
				top.keys[s] = true
				top.key = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{keys: map[string]bool{}, object: true, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = true
		}
	}
}
