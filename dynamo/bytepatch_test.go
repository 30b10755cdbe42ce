package dynamo

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// messages is a msgpack array of n messages of about 1 KB, as a growing
// conversation serializes.
func messages(n int) []byte {
	type message struct {
		ID      int    `msgpack:"id"`
		Type    string `msgpack:"type"`
		Content string `msgpack:"content"`
	}
	var ms []message
	for i := range n {
		rng := rand.New(rand.NewPCG(uint64(i), 1))
		words := make([]string, 200)
		for w := range words {
			words[w] = strconv.FormatUint(rng.Uint64()%100000, 36)
		}
		ms = append(ms, message{i, "human", strings.Join(words, " ")})
	}
	b, err := msgpack.Marshal(ms)
	if err != nil {
		panic(err)
	}
	return b
}

func TestDiff(t *testing.T) {
	tests := []struct {
		name      string
		base      []byte
		next      []byte
		max       int
		ok        bool
		atMostLen int // the patch's length, when ok
	}{
		{"append two messages", messages(40), messages(42), 4096, true, len(messages(2)) + 16},
		// 15 -> 17 elements: the array's header grows from 1 to 3 bytes and
		// every byte after it moves.
		{"header grows", messages(15), messages(17), 4096, false, 0},
		{"identical", messages(20), messages(20), 64, true, 4},
		{"one byte changed in place", []byte("counter=41;rest"), []byte("counter=42;rest"), 64, true, 5},
		{"shrink", []byte("abcdefgh"), []byte("abcd"), 64, true, 2},
		{"from empty", nil, []byte("new"), 64, true, 5},
		{"to empty", []byte("old"), nil, 64, true, 2},
		{"unrelated", bytes.Repeat([]byte{1}, 4096), bytes.Repeat([]byte{2}, 4096), 1024, false, 0},
		{"tail over max", []byte("a"), bytes.Repeat([]byte("b"), 100), 50, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := diff(tt.base, tt.next, tt.max)
			if ok != tt.ok {
				t.Fatalf("diff ok = %v (patch %d bytes), want %v", ok, len(p), tt.ok)
			}
			if !ok {
				return
			}
			if len(p) > tt.max || len(p) > tt.atMostLen {
				t.Fatalf("patch of %d bytes, want at most %d (max %d)", len(p), tt.atMostLen, tt.max)
			}
			got, err := patch(tt.base, p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.next) {
				t.Fatalf("patch(base, diff) = %q..., want %q...", got[:min(len(got), 20)], tt.next[:min(len(tt.next), 20)])
			}
		})
	}
}

func TestPatchRefusesCorrupt(t *testing.T) {
	base := messages(3)
	good, ok := diff(base, messages(4), 4096)
	if !ok {
		t.Fatal("no patch")
	}
	tests := map[string][]byte{
		"empty":          nil,
		"truncated":      good[:len(good)/2],
		"huge length":    {0xff, 0xff, 0xff, 0xff, 0x0f, 0},
		"run past end":   {4, 1, 10, 1, 'x'},
		"tail too long":  append(append([]byte{}, good...), 'x'),
		"count too high": {3, 5},
	}
	for name, p := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := patch(base[:3], p); err == nil {
				t.Fatal("corrupt patch applied")
			}
		})
	}
}

// FuzzDelta: whatever two values, a patch diff returns rebuilds the second
// from the first, and patch never panics on any input.
func FuzzDelta(f *testing.F) {
	f.Add(messages(2), messages(3), 4096)
	f.Add([]byte("abc"), []byte("abd"), 10)
	f.Add([]byte{}, []byte{}, 0)
	f.Fuzz(func(t *testing.T, base, next []byte, max int) {
		if p, ok := diff(base, next, max); ok {
			if len(p) > max {
				t.Fatalf("patch of %d bytes over max %d", len(p), max)
			}
			got, err := patch(base, p)
			if err != nil || !bytes.Equal(got, next) {
				t.Fatalf("roundtrip: %v, got %x want %x", err, got, next)
			}
		}
		_, _ = patch(base, next) // arbitrary bytes as a patch: an error, never a panic
	})
}
