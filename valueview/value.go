// Package valueview decodes the values LangGraph's serializer writes
// (saver.Typed) for display: channel values and pending writes, read-only,
// as a Value tree that renders to compact text and yields chat messages.
//
// Nothing here runs or trusts client code: LangGraph's msgpack ext types
// (pydantic models, dataclasses, messages, sets, datetimes …) become Objects
// named by module and class, never constructed. Decoding is bounded in
// depth and in values, rendering in output size, so a hostile value costs at
// most what the Limits allow. A value the service cannot read (an encrypted
// serializer's type, pickle, an unknown ext) is named by type and size,
// never guessed.
package valueview

// Kind says what a Value holds.
type Kind uint8

const (
	Null   Kind = iota
	Bool        // Bool
	Number      // Text: the number as JSON writes it
	String      // Text
	Bytes       // Size: the byte count (bytes are never shown)
	Array       // Items
	Map         // Items: key, value, key, value …
	Object      // Module, Name, Code; Items[0]: the constructor's arguments
	Opaque      // Text: the type it was written as; Size: its byte count
	Cut         // Size: values left out here by a limit
)

// Value is a decoded value. Values are small trees built by Decode, bounded
// by its Limits; they are not meant to be changed.
type Value struct {
	Kind Kind
	Bool bool
	// Text is a String's text, a Number's digits, an Opaque's type.
	Text string
	// Size is a Bytes' or an Opaque's byte count, or how many values a
	// Cut stands for (0 when unknown, as for a depth cut).
	Size int
	// Items are an Array's elements, a Map's keys and values in turn, or
	// an Object's single argument value.
	Items []Value
	// Module and Name are an Object's class; Code its LangGraph ext type.
	Module, Name string
	Code         int8
}

// LangGraph's msgpack ext types (langgraph.checkpoint.serde.jsonplus). Each
// ext holds a msgpack array (module, name, args[, method]), but the numpy
// one, which holds (dtype, shape, order, buffer), and the delta snapshot,
// which holds one value.
const (
	ExtConstructorSingleArg int8 = 0
	ExtConstructorPosArgs   int8 = 1
	ExtConstructorKwArgs    int8 = 2
	ExtMethodSingleArg      int8 = 3
	ExtPydanticV1           int8 = 4
	ExtPydanticV2           int8 = 5
	ExtNumpyArray           int8 = 6
	ExtDeltaSnapshot        int8 = 7
)

// Limits bound decoding and rendering.
type Limits struct {
	// Depth is how deep containers nest; deeper ones become a Cut. An
	// ext's arguments count as one level.
	Depth int
	// Items is how many values are decoded in all; the rest of each
	// container past it becomes a Cut counting what was left out.
	Items int
	// Bytes is the most a rendering writes, "…" included.
	Bytes int
}

// DefaultLimits suit a value shown on a page.
var DefaultLimits = Limits{Depth: 16, Items: 2000, Bytes: 4096}

// Get returns the value of key k in a Map (or in an Object's keyword
// arguments), and whether it was there.
func (v Value) Get(k string) (Value, bool) {
	m := v
	if v.Kind == Object && len(v.Items) == 1 {
		m = v.Items[0]
	}
	if m.Kind != Map {
		return Value{}, false
	}
	for i := 0; i+1 < len(m.Items); i += 2 {
		if key := m.Items[i]; key.Kind == String && key.Text == k {
			return m.Items[i+1], true
		}
	}
	return Value{}, false
}

// Str returns v's text if v is a String, else "".
func (v Value) Str() string {
	if v.Kind == String {
		return v.Text
	}
	return ""
}
