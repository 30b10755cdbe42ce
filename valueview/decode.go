package valueview

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/saver-dev/saver"
)

// Decode decodes a value LangGraph's serializer wrote. Its type tag says how:
// "msgpack" and "json" values are decoded within lim; "null" and the empty
// blob are Null; "bytes" and "bytearray" are Bytes. Anything else (pickle,
// an encrypted serializer's "msgpack+aes", a type of the client's own) and
// any value that is not well formed is Opaque: named by type and size.
func Decode(t saver.Typed, lim Limits) Value {
	left := lim.Items
	opaque := Value{Kind: Opaque, Text: t.Type, Size: len(t.Data)}
	switch t.Type {
	case "null", saver.EmptyType:
		return Value{Kind: Null}
	case "bytes", "bytearray":
		return Value{Kind: Bytes, Size: len(t.Data)}
	case "msgpack":
		v, err := decodeMsgpack(t.Data, lim, &left)
		if err != nil {
			return opaque
		}
		return v
	case "json":
		d := json.NewDecoder(bytes.NewReader(t.Data))
		d.UseNumber()
		var x any
		if err := d.Decode(&x); err != nil || d.More() {
			return opaque
		}
		return fromJSON(x, lim, &left, 0)
	}
	return opaque
}

// fromJSON converts a decoded JSON value within lim. LangChain's JSON form of
// a serializable object ({"lc": 1, "type": "constructor", "id": [...],
// "kwargs": {...}}) becomes an Object, as the msgpack ext would.
func fromJSON(x any, lim Limits, left *int, depth int) Value {
	*left--
	switch x := x.(type) {
	case nil:
		return Value{Kind: Null}
	case bool:
		return Value{Kind: Bool, Bool: x}
	case json.Number:
		return num(x.String())
	case string:
		return Value{Kind: String, Text: x}
	case []any:
		if depth >= lim.Depth {
			return Value{Kind: Cut, Size: len(x)}
		}
		v := Value{Kind: Array}
		for i, e := range x {
			if *left <= 0 {
				v.Items = append(v.Items, Value{Kind: Cut, Size: len(x) - i})
				break
			}
			v.Items = append(v.Items, fromJSON(e, lim, left, depth+1))
		}
		return v
	case map[string]any:
		if o, ok := lcObject(x, lim, left, depth); ok {
			return o
		}
		if depth >= lim.Depth {
			return Value{Kind: Cut, Size: len(x)}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys) // Go forgets JSON's key order; sorting keeps output stable
		v := Value{Kind: Map}
		for i, k := range keys {
			if *left <= 0 {
				v.Items = append(v.Items, Value{Kind: Cut, Size: len(keys) - i}, Value{Kind: Cut})
				break
			}
			*left--
			v.Items = append(v.Items, Value{Kind: String, Text: k}, fromJSON(x[k], lim, left, depth+1))
		}
		return v
	}
	return Value{Kind: Opaque, Text: "json"}
}

// lcObject reads LangChain's serialized-constructor form.
func lcObject(x map[string]any, lim Limits, left *int, depth int) (Value, bool) {
	if x["lc"] != json.Number("1") || x["type"] != "constructor" {
		return Value{}, false
	}
	id, _ := x["id"].([]any)
	kwargs, ok := x["kwargs"].(map[string]any)
	if len(id) == 0 || !ok {
		return Value{}, false
	}
	path := make([]string, len(id))
	for i, p := range id {
		if path[i], ok = p.(string); !ok {
			return Value{}, false
		}
	}
	if depth >= lim.Depth {
		return Value{Kind: Cut}, true
	}
	return Value{Kind: Object, Code: ExtConstructorKwArgs,
		Module: strings.Join(path[:len(path)-1], "."), Name: path[len(path)-1],
		Items: []Value{fromJSON(kwargs, lim, left, depth+1)}}, true
}
