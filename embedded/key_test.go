package embedded

import (
	"bytes"
	"cmp"
	"slices"
	"testing"
)

func TestKeyEscaping(t *testing.T) {
	tests := []struct {
		name  string
		parts []string
		want  []byte
	}{
		{"Empty", nil, nil},
		{"EmptyComponent", []string{""}, []byte{0}},
		{"Plain", []string{"t", "thread"}, []byte("t\x00thread\x00")},
		{"Separator", []string{"a\x00b"}, []byte{'a', 1, 1, 'b', 0}},
		{"Escape", []string{"a\x01b"}, []byte{'a', 1, 2, 'b', 0}},
		{"EscapedPair", []string{"\x01\x01\x00"}, []byte{1, 2, 1, 2, 1, 1, 0}},
		{"HighBytes", []string{"\xff\x02"}, []byte{0xff, 2, 0}},
		{"Unicode", []string{"ü", ""}, []byte{0xc3, 0xbc, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := key(tt.parts...)
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("key(%q) = %q, want %q", tt.parts, got, tt.want)
			}
			back, err := parseKey(got, len(tt.parts))
			if err != nil {
				t.Fatalf("parseKey(%q): %v", got, err)
			}
			if !slices.Equal(back, tt.parts) {
				t.Fatalf("parseKey(%q) = %q, want %q", got, back, tt.parts)
			}
		})
	}
}

func TestKeyOrder(t *testing.T) {
	// Each tuple sorts strictly before the next, component by component.
	tuples := [][]string{
		{"a", ""},
		{"a", "\x00"},
		{"a", "\x00\x00"},
		{"a", "\x00\x01"},
		{"a", "\x01"},
		{"a", "\x01\x00"},
		{"a", "\x02"},
		{"a", "z"},
		{"a\x00", ""},
		{"a\x00", "z"},
		{"a\x00b", ""},
		{"a\x01", ""},
		{"ab", ""},
		{"b", ""},
	}
	for i := 1; i < len(tuples); i++ {
		a, b := key(tuples[i-1]...), key(tuples[i]...)
		if bytes.Compare(a, b) >= 0 {
			t.Errorf("key(%q) = %q does not sort before key(%q) = %q", tuples[i-1], a, tuples[i], b)
		}
	}
}

func TestPrefixEnd(t *testing.T) {
	prefix := key("tenant", "a")
	inside := [][]string{{"tenant", "a", ""}, {"tenant", "a", "\xff\xff"}, {"tenant", "a", "\x00", "\x00"}}
	outside := [][]string{{"tenant", "a\x00"}, {"tenant", "a\x01"}, {"tenant", "ab"}, {"tenant", "b"}}
	end := prefixEnd(prefix)
	for _, parts := range inside {
		if k := key(parts...); !bytes.HasPrefix(k, prefix) || bytes.Compare(k, end) >= 0 {
			t.Errorf("key(%q) not inside [prefix, end)", parts)
		}
	}
	for _, parts := range outside {
		if k := key(parts...); bytes.HasPrefix(k, prefix) || bytes.Compare(k, end) < 0 {
			t.Errorf("key(%q) not after end", parts)
		}
	}
}

func TestIdxOrder(t *testing.T) {
	idxs := []int64{-1 << 63, -1_000_000, -4, -3, -1, 0, 1, 2, 10, 255, 256, 1 << 40, 1<<63 - 1}
	for i, idx := range idxs {
		back, err := parseIdx(idxComponent(idx))
		if err != nil || back != idx {
			t.Fatalf("parseIdx(idxComponent(%d)) = %d, %v", idx, back, err)
		}
		if i > 0 {
			a, b := key("t", idxComponent(idxs[i-1])), key("t", idxComponent(idx))
			if bytes.Compare(a, b) >= 0 {
				t.Errorf("idx %d does not sort before %d", idxs[i-1], idx)
			}
		}
	}
}

func TestParseKeyRejectsMalformed(t *testing.T) {
	for _, k := range [][]byte{
		[]byte("no separator"),
		{'a', 1, 0},      // escape at the end of a component
		{'a', 1, 3, 0},   // unknown escape
		{'a', 0, 'b', 0}, // one component too many
	} {
		if parts, err := parseKey(k, 1); err == nil {
			t.Errorf("parseKey(%q) = %q, want an error", k, parts)
		}
	}
}

// FuzzKeyRoundTrip checks the two properties the layout relies on: keys
// decode to the tuple they encode, and byte order is tuple order.
func FuzzKeyRoundTrip(f *testing.F) {
	f.Add("a", "b", "a", "b")
	f.Add("a", "", "a\x00", "")
	f.Add("a\x00b", "c", "a", "b\x00c")
	f.Add("\x01", "\x00", "\x00", "\x01")
	f.Add("x\x01\x02", "", "x\x01", "\x02")
	f.Add("", "", "", "")
	f.Add("ü", "\xff", "u", "\x00\x00")
	f.Fuzz(func(t *testing.T, a1, b1, a2, b2 string) {
		k1, k2 := key(a1, b1), key(a2, b2)
		for _, c := range []struct {
			k     []byte
			parts []string
		}{{k1, []string{a1, b1}}, {k2, []string{a2, b2}}} {
			got, err := parseKey(c.k, 2)
			if err != nil || !slices.Equal(got, c.parts) {
				t.Fatalf("parseKey(key(%q)) = %q, %v", c.parts, got, err)
			}
		}
		want := cmp.Or(cmp.Compare(a1, a2), cmp.Compare(b1, b2))
		if got := bytes.Compare(k1, k2); got != want {
			t.Fatalf("bytes.Compare(key(%q, %q), key(%q, %q)) = %d, tuple order %d", a1, b1, a2, b2, got, want)
		}
		// A one-component prefix matches exactly the tuples that extend it.
		if got, want := bytes.HasPrefix(k2, key(a1)), a1 == a2; got != want {
			t.Fatalf("key(%q, %q) has prefix key(%q) = %v, want %v", a2, b2, a1, got, want)
		}
	})
}
