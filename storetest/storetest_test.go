package storetest

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver"
)

// TestTupleOptionsComparePayloads: payloads compare by their bytes (one
// byte off is a difference, however large), and nil equals empty.
func TestTupleOptionsComparePayloads(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 1<<20)
	off := bytes.Clone(big)
	off[len(off)/2] = 'y'
	tuple := func(data []byte) *saver.Tuple {
		return &saver.Tuple{Values: []saver.Blob{{Channel: "ch", Version: "1", Value: saver.Typed{Type: "bytes", Data: data}}}}
	}
	tests := []struct {
		name string
		a, b []byte
		same bool
	}{
		{"equal", big, bytes.Clone(big), true},
		{"one byte off", big, off, false},
		{"nil and empty", nil, []byte{}, true},
		{"empty and one byte", []byte{}, []byte{0}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if same := cmp.Equal(tuple(tt.a), tuple(tt.b), TupleOptions); same != tt.same {
				t.Fatalf("equal = %v, want %v", same, tt.same)
			}
		})
	}
}
