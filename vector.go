package saver

import (
	"encoding/binary"
	"math"
)

// The byte form of vectors: float32s, little-endian, end to end. The stores
// keep an item's vectors so (ScoreBytes scores them where they lie), and the
// clients may send a vector so (a msgpack bin), as numpy and typed arrays
// lay it out.

// EncodeVectors lays vs end to end in their byte form.
func EncodeVectors(vs [][]float32) []byte {
	n := 0
	for _, v := range vs {
		n += len(v)
	}
	b := make([]byte, 0, 4*n)
	for _, v := range vs {
		for _, x := range v {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
	}
	return b
}

// DecodeVector reads one vector from its byte form; false when b is not
// whole float32s.
func DecodeVector(b []byte) ([]float32, bool) {
	if len(b)%4 != 0 {
		return nil, false
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, true
}
