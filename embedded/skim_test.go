package embedded

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/saver-dev/saver"
)

func mustMarshal(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		tb.Fatalf("Marshal(%v): %v", v, err)
	}
	return b
}

// TestSkimScalars reads each msgpack scalar format, as the library writes
// it, and checks both the value and that nothing is left over.
func TestSkimScalars(t *testing.T) {
	long := strings.Repeat("s", 70000)
	tests := []struct {
		name string
		v    any
		want item
	}{
		{"Nil", nil, item{kind: kindNil}},
		{"True", true, item{kind: kindBool, bool: true}},
		{"False", false, item{kind: kindBool}},
		{"FixInt", int64(127), item{kind: kindInt, i: 127}},
		{"Uint8", uint64(200), item{kind: kindInt, i: 200}},
		{"Uint16", uint64(65535), item{kind: kindInt, i: 65535}},
		{"Uint32", uint64(1 << 32 >> 1), item{kind: kindInt, i: 1 << 31}},
		{"Uint64", uint64(math.MaxInt64), item{kind: kindInt, i: math.MaxInt64}},
		{"Uint64OverInt64", uint64(math.MaxUint64), item{kind: kindUint, u: math.MaxUint64}},
		{"NegFixInt", int64(-32), item{kind: kindInt, i: -32}},
		{"Int8", int64(-128), item{kind: kindInt, i: -128}},
		{"Int16", int64(-32768), item{kind: kindInt, i: -32768}},
		{"Int32", int64(math.MinInt32), item{kind: kindInt, i: math.MinInt32}},
		{"Int64", int64(math.MinInt64), item{kind: kindInt, i: math.MinInt64}},
		{"Float32", float32(1.5), item{kind: kindFloat, f: 1.5}},
		{"Float64", -2.25, item{kind: kindFloat, f: -2.25}},
		{"EmptyStr", "", item{kind: kindStr, data: []byte{}}},
		{"FixStr", "abc", item{kind: kindStr, data: []byte("abc")}},
		{"Str8", strings.Repeat("s", 40), item{kind: kindStr, data: []byte(strings.Repeat("s", 40))}},
		{"Str16", strings.Repeat("s", 300), item{kind: kindStr, data: []byte(strings.Repeat("s", 300))}},
		{"Str32", long, item{kind: kindStr, data: []byte(long)}},
		{"Bin8", []byte{0, 1, 2}, item{kind: kindBin, data: []byte{0, 1, 2}}},
		{"Bin16", bytes.Repeat([]byte{7}, 300), item{kind: kindBin, data: bytes.Repeat([]byte{7}, 300)}},
		{"Bin32", []byte(long), item{kind: kindBin, data: []byte(long)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := skim{b: mustMarshal(t, tt.v)}
			got := s.next()
			if s.err != nil || len(s.b) != 0 {
				t.Fatalf("next: err %v, %d bytes left", s.err, len(s.b))
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(item{})); diff != "" {
				t.Fatalf("item mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSkimSkip skips whole values of every size class and checks that
// exactly their bytes are consumed.
func TestSkimSkip(t *testing.T) {
	many := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = []any{i, "x"}
		}
		return out
	}
	manyMap := func(n int) map[string]any {
		out := make(map[string]any, n)
		for i := range n {
			out[strings.Repeat("k", i%50)+strconv.Itoa(i)] = map[string]any{"v": i}
		}
		return out
	}
	tests := []struct {
		name string
		b    []byte
	}{
		{"FixArray", mustMarshal(t, many(15))},
		{"Array16", mustMarshal(t, many(16))},
		{"Array32", mustMarshal(t, many(70000))},
		{"FixMap", mustMarshal(t, manyMap(15))},
		{"Map16", mustMarshal(t, manyMap(300))},
		{"Map32", mustMarshal(t, manyMap(70000))},
		{"Time", mustMarshal(t, time.Unix(1, 5))},
		{"Deep", mustMarshal(t, func() any {
			var v any = "leaf"
			for range 10000 {
				v = []any{v}
			}
			return v
		}())},
		{"FixExt1", []byte{0xd4, 0x05, 0xaa}},
		{"FixExt16", append([]byte{0xd8, 0x05}, make([]byte, 16)...)},
		{"Ext8", []byte{0xc7, 0x02, 0x05, 0xaa, 0xbb}},
		{"Ext16", []byte{0xc8, 0x00, 0x03, 0x05, 'a', 'b', 'c'}},
		{"Ext32", []byte{0xc9, 0, 0, 0, 2, 0x05, 'a', 'b'}},
		{"CheckpointRecord", mustMarshal(t, &checkpointRecord{
			ParentID: "p", Body: saver.Typed{Type: "msgpack", Data: make([]byte, 1<<20)},
			Metadata: map[string]any{"a": []any{1.5, nil, true}}, ChannelVersions: map[string]string{"c": "1"},
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A trailing value shows whether skip stopped at the right byte.
			s := skim{b: append(bytes.Clone(tt.b), 0x2a)}
			s.skip()
			if got := s.next(); s.err != nil || got.kind != kindInt || got.i != 42 || len(s.b) != 0 {
				t.Fatalf("after skip: item %+v, err %v, %d bytes left", got, s.err, len(s.b))
			}
		})
	}
}

// TestSkimMalformed reads values that are cut short or never valid: an
// error, never a panic or a read past the end.
func TestSkimMalformed(t *testing.T) {
	for _, b := range [][]byte{
		{},
		{0xc1},                         // never used
		{0xa3, 'a'},                    // fixstr cut short
		{0xd9},                         // str8 without its length
		{0xdb, 0xff, 0xff, 0xff, 0xff}, // str32 longer than the input
		{0x92, 0x01},                   // array missing an element
		{0xdd, 0xff, 0xff, 0xff, 0xff}, // 4 billion elements, none there
		{0xdf, 0xff, 0xff, 0xff, 0xff, 0x01},
		{0xcb, 0, 0, 0}, // float64 cut short
		{0xd8, 0x05, 0}, // fixext16 cut short
		{0xc9, 0, 0, 0}, // ext32 without its length
		{0xc7, 0x02, 5}, // ext8 without its data
		{0x82, 0x01, 0x02, 0x03},
	} {
		s := skim{b: b}
		s.skip()
		if s.err == nil {
			t.Errorf("skip(% x) succeeded", b)
		}
	}
}

// FuzzSkim checks skip against the msgpack library: the same inputs are
// valid, and a valid value is the same number of bytes. It also reads every
// input as a checkpoint record's node fields, which must not panic.
func FuzzSkim(f *testing.F) {
	f.Add([]byte{0x92, 0x01, 0xa1, 'x'})
	f.Add(mustMarshal(f, map[string]any{"a": []any{1, 2.5, "s", nil, true, []byte{1}}}))
	f.Add(mustMarshal(f, time.Unix(1, 5)))
	f.Add(mustMarshal(f, &checkpointRecord{ParentID: "p", Metadata: map[string]any{
		"source": "loop", "step": 3.0, "parents": map[string]any{"": "x", "n": 1},
	}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := skim{b: b}
		s.skip()
		r := bytes.NewReader(b)
		err := msgpack.NewDecoder(r).Skip()
		if (s.err == nil) != (err == nil) {
			t.Fatalf("skip(% x): skim err %v, msgpack err %v", b, s.err, err)
		}
		if err == nil && len(s.b) != r.Len() {
			t.Fatalf("skip(% x): skim left %d bytes, msgpack %d", b, len(s.b), r.Len())
		}
		var n saver.Node
		_, _ = decodeNode(&n, b)
	})
}
