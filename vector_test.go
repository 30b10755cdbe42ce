package saver_test

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver"
)

// TestVectorBytes: vectors laid end to end read back one by one, in the
// layout the clients send (float32s, little-endian), and a length that is
// not whole float32s is refused.
func TestVectorBytes(t *testing.T) {
	vs := [][]float32{{0.5, -0.25, 3}, {float32(math.Inf(-1)), 0, math.MaxFloat32}, {}}
	b := saver.EncodeVectors(vs)
	if want := []byte{0, 0, 0, 0x3f}; string(b[:4]) != string(want) {
		t.Fatalf("0.5 is % x, want % x (little-endian float32)", b[:4], want)
	}
	for i, off := 0, 0; i < len(vs); i++ {
		got, ok := saver.DecodeVector(b[off : off+4*len(vs[i])])
		if !ok || !cmp.Equal(got, vs[i]) {
			t.Fatalf("vector %d = %v, %v; want %v", i, got, ok, vs[i])
		}
		off += 4 * len(vs[i])
	}
	if _, ok := saver.DecodeVector(b[:5]); ok {
		t.Fatal("5 bytes read as a vector")
	}
}
