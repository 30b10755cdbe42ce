package api

import (
	"reflect"
	"strings"
	"sync"
)

// shape is what a request body may hold at one place, taken from the Go type
// it decodes into. The body scanners (msgpackscan.go, jsonscan.go) walk a body
// along its shape before the decoders see it: a struct takes a map whose keys
// are exactly its field names, a map string keys, a slice an array. Anything
// else is left to the decoder, which checks scalar types itself.
type shape struct {
	kind   shapeKind
	fields map[string]*shape // shapeStruct: field types by wire name
	elem   *shape            // shapeMap, shapeSlice: the element's shape
	// slot is what one element (a slice's) or entry (a map's: key and
	// value) takes once decoded, before its own contents: the element
	// types' sizes. The scanners add it up to bound the decoded size
	// (cost.go).
	slot int
	// boxed: the value decodes into an interface (any), which allocates
	// what it holds, and whose maps and arrays hold interfaces in turn.
	boxed bool
	// bin: a slice whose msgpack form may also be a bin (binSlice), whose
	// bytes it decodes to as many bytes of its own.
	bin bool
}

// binSlice marks a slice type that also decodes from a msgpack bin, its
// elements' bytes in a row (vectorWire: float32s, as numpy and typed arrays
// write them), which takes neither a number header per element nor a
// float64 where the service keeps a float32.
type binSlice interface{ decodesFromBin() }

var binSliceType = reflect.TypeFor[binSlice]()

type shapeKind uint8

const (
	shapeAny    shapeKind = iota // any value: scalars, and metadata's any
	shapeStruct                  // a map with the struct's field names
	shapeMap                     // a map with string keys
	shapeSlice                   // an array
)

// anyShape is a scalar the decoder checks; ifaceShape any value at all,
// decoded into an interface.
var (
	anyShape   = &shape{kind: shapeAny}
	ifaceShape = &shape{kind: shapeAny, boxed: true}
)

type shapeKey struct {
	t   reflect.Type
	tag string
}

var shapes sync.Map // shapeKey -> *shape

// shapeOf returns the shape of t's values on a wire whose field names come
// from the struct tag tag ("json" or "msgpack").
func shapeOf(t reflect.Type, tag string) *shape {
	k := shapeKey{t, tag}
	if s, ok := shapes.Load(k); ok {
		return s.(*shape)
	}
	s := buildShape(t, tag, map[reflect.Type]*shape{})
	shapes.Store(k, s)
	return s
}

// buildShape derives t's shape; seen ends recursive types at their first use.
func buildShape(t reflect.Type, tag string, seen map[reflect.Type]*shape) *shape {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s, ok := seen[t]; ok {
		return s
	}
	switch t.Kind() {
	case reflect.Struct:
		s := &shape{kind: shapeStruct, fields: map[string]*shape{}}
		seen[t] = s
		addFields(s, t, tag, seen)
		return s
	case reflect.Interface:
		return ifaceShape
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return ifaceShape
		}
		s := &shape{kind: shapeMap, slot: int(t.Key().Size() + t.Elem().Size())}
		seen[t] = s
		s.elem = buildShape(t.Elem(), tag, seen)
		return s
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 { // bytes: a bin, or base64 in JSON
			return anyShape
		}
		s := &shape{kind: shapeSlice, slot: int(t.Elem().Size()), bin: tag == "msgpack" && t.Implements(binSliceType)}
		seen[t] = s
		s.elem = buildShape(t.Elem(), tag, seen)
		return s
	}
	return anyShape
}

// addFields adds t's exported fields under their wire names, with embedded
// structs' fields promoted as both codecs promote them.
func addFields(s *shape, t reflect.Type, tag string, seen map[reflect.Type]*shape) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get(tag), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			addFields(s, ft, tag, seen)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		s.fields[name] = buildShape(f.Type, tag, seen)
	}
}
