package api

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// TestDecodedHeap decodes bodies of many small values of every kind, in
// metadata and in the search filter, both codecs, and holds the scanners to
// what the decoders really keep: the heap a decoded body holds is at most
// what its scan estimated, and the scan's estimate is within decodeBudget.
// Before the scanners counted maps and boxes (cost.go), an empty map was 16
// bytes to them and 64 to the heap.
func TestDecodedHeap(t *testing.T) {
	mpArray := func(n int, elem []byte) []byte {
		b := []byte{0xdd, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(b[1:], uint32(n))
		return append(b, bytes.Repeat(elem, n)...)
	}
	mpMapOf := func(n int, elem []byte) []byte { // keys "0", "1", ...
		b := []byte{0xdf, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(b[1:], uint32(n))
		for i := 0; i < n; i++ {
			k := fmt.Sprint(i)
			b = append(append(append(b, 0xa0|byte(len(k))), k...), elem...)
		}
		return b
	}
	mpField := func(field string, v []byte) []byte {
		return append(append([]byte{0x81, 0xa0 | byte(len(field))}, field...), v...)
	}
	jsArray := func(n int, elem string) string { return "[" + elem + strings.Repeat(","+elem, n-1) + "]" }
	jsMapOf := func(n int, elem string) string {
		var b strings.Builder
		b.WriteString("{")
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "%q:%s", fmt.Sprint(i), elem)
		}
		return b.String() + "}"
	}
	nine := []byte{0x89}
	for i := 0; i < 9; i++ {
		nine = append(nine, 0xa1, '0'+byte(i), 0xc0)
	}
	mpElems := []struct {
		name string
		elem []byte
		n    int
	}{
		{"Nils", []byte{0xc0}, 40_000},
		{"FixInts", []byte{0x05}, 40_000},
		{"Int16s", []byte{0xd1, 0x10, 0x01}, 40_000},
		{"Float64s", []byte{0xcb, 0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18}, 40_000},
		{"EmptyStrings", []byte{0xa0}, 40_000},
		{"OneByteStrings", []byte{0xa1, 'x'}, 40_000},
		{"EightByteStrings", []byte{0xa8, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'}, 40_000},
		{"Bins", []byte{0xc4, 0x01, 0x01}, 40_000},
		{"Times", []byte{0xd6, 0xff, 0, 0, 0, 1}, 40_000},
		{"EmptyMaps", []byte{0x80}, 40_000},
		{"EmptyArrays", []byte{0x90}, 40_000},
		{"OneEntryMaps", []byte{0x81, 0xa1, 'k', 0xc0}, 10_000},
		{"NineEntryMaps", nine, 3_000},
		{"OneElementArrays", []byte{0x91, 0xc0}, 40_000},
	}
	jsElems := []struct {
		name, elem string
		n          int
	}{
		{"Nulls", "null", 40_000},
		{"Trues", "true", 40_000},
		{"SmallInts", "5", 40_000},
		{"LongInts", "1234567890123", 40_000},
		{"Floats", "1.5e3", 40_000},
		{"EmptyStrings", `""`, 40_000},
		{"OneByteStrings", `"x"`, 40_000},
		{"EmptyObjects", "{}", 40_000},
		{"EmptyArrays", "[]", 40_000},
		{"OneEntryObjects", `{"k":null}`, 10_000},
		{"NineEntryObjects", `{"0":0,"1":0,"2":0,"3":0,"4":0,"5":0,"6":0,"7":0,"8":0}`, 3_000},
		{"OneElementArrays", "[null]", 40_000},
	}
	type target struct {
		name  string
		field string
		new   func() any
	}
	targets := []target{
		{"Metadata", "metadata", func() any { return &putCheckpointRequest{} }},
		{"Filter", "filter", func() any { return &searchRequest{} }},
	}
	for _, tg := range targets {
		for _, e := range mpElems {
			for _, layout := range []string{"Array", "Map"} {
				inner := mpArray(e.n, e.elem)
				if layout == "Map" {
					inner = mpMapOf(e.n, e.elem)
				} else {
					inner = mpField("a", inner)
				}
				body := mpField(tg.field, inner)
				t.Run("Msgpack/"+tg.name+"/"+layout+"Of"+e.name, func(t *testing.T) {
					checkDecodedHeap(t, body, tg.new, scanMsgpack, func(b []byte, v any) error { return decodeMsgpack(b, v, nil) })
				})
			}
		}
		for _, e := range jsElems {
			for _, layout := range []string{"Array", "Map"} {
				inner := `{"a":` + jsArray(e.n, e.elem) + `}`
				if layout == "Map" {
					inner = jsMapOf(e.n, e.elem)
				}
				body := []byte(`{"` + tg.field + `":` + inner + `}`)
				t.Run("JSON/"+tg.name+"/"+layout+"Of"+e.name, func(t *testing.T) {
					checkDecodedHeap(t, body, tg.new, scanJSON, func(b []byte, v any) error { return decodeJSON(b, v, nil) })
				})
			}
		}
	}
}

// checkDecodedHeap decodes body into a new target and compares the heap it
// keeps with the scan's estimate.
func checkDecodedHeap(t *testing.T, body []byte, newTarget func() any, scan func([]byte, *shape) (int, error), decode func([]byte, any) error) {
	v := newTarget()
	est, err := scan(body, shapeOf(reflect.TypeOf(v), "msgpack"))
	if bytes.HasPrefix(body, []byte("{")) {
		est, err = scan(body, shapeOf(reflect.TypeOf(v), "json"))
	}
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	if limit := decodeBudget(len(body)); est > limit {
		t.Fatalf("estimate %d over the budget %d", est, limit)
	}
	before := liveHeap()
	if err := decode(body, v); err != nil {
		t.Fatalf("decode: %v", err)
	}
	after := liveHeap()
	runtime.KeepAlive(v)
	runtime.KeepAlive(body)
	// The runtime's own allocations while decoding (a few KB under the race
	// detector) are not the body's.
	const runtimeSlack = 64 << 10
	if kept := int(after) - int(before); kept > est+runtimeSlack {
		t.Fatalf("a %d-byte body decoded to %d bytes of heap; its scan estimated %d", len(body), kept, est)
	} else {
		t.Logf("%d bytes: heap %d, estimate %d (%.2f)", len(body), kept, est, float64(kept)/float64(est))
	}
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
