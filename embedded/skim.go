package embedded

import (
	"encoding/binary"
	"errors"
	"math"
)

// skim reads msgpack in place: it decodes the few values its caller asks
// for and steps over the others by their lengths, so that a payload it
// passes is neither copied nor parsed. It only reads; a malformed value sets
// err, and every later read returns zero values.
type skim struct {
	b   []byte
	err error
}

var errBadRecord = errors.New("malformed msgpack record")

// kind is the type of a msgpack value.
type kind uint8

const (
	kindNil kind = iota + 1
	kindBool
	kindInt   // fits int64
	kindUint  // above math.MaxInt64
	kindFloat // float32 or float64
	kindStr
	kindBin
	kindExt
	kindArray
	kindMap
)

// item is one value as next reads it. For a string, binary or extension
// value, data holds its bytes, aliasing the input. For an array or map, n is
// its number of elements (pairs for a map), which follow it unread.
type item struct {
	kind kind
	n    uint64
	data []byte
	i    int64
	u    uint64
	f    float64
	bool bool
}

func (s *skim) fail() {
	if s.err == nil {
		s.err = errBadRecord
	}
	s.b = nil
}

// take consumes the next n bytes.
func (s *skim) take(n uint64) []byte {
	if s.err != nil || uint64(len(s.b)) < n {
		s.fail()
		return nil
	}
	out := s.b[:n:n]
	s.b = s.b[n:]
	return out
}

// uint consumes a big-endian unsigned integer of size bytes.
func (s *skim) uint(size uint64) uint64 {
	b := s.take(size)
	switch len(b) {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.BigEndian.Uint16(b))
	case 4:
		return uint64(binary.BigEndian.Uint32(b))
	case 8:
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

// next consumes the next value's header and, for strings, binary and
// extension values, its bytes.
func (s *skim) next() item {
	head := s.take(1)
	if head == nil {
		return item{}
	}
	switch c := head[0]; {
	case c <= 0x7f:
		return item{kind: kindInt, i: int64(c)}
	case c >= 0xe0:
		return item{kind: kindInt, i: int64(int8(c))}
	case c <= 0x8f:
		return item{kind: kindMap, n: uint64(c & 0x0f)}
	case c <= 0x9f:
		return item{kind: kindArray, n: uint64(c & 0x0f)}
	case c <= 0xbf:
		return item{kind: kindStr, data: s.take(uint64(c & 0x1f))}
	case c == 0xc0:
		return item{kind: kindNil}
	case c == 0xc2, c == 0xc3:
		return item{kind: kindBool, bool: c == 0xc3}
	case c >= 0xc4 && c <= 0xc6: // bin 8, 16, 32
		return item{kind: kindBin, data: s.take(s.uint(1 << (c - 0xc4)))}
	case c >= 0xc7 && c <= 0xc9: // ext 8, 16, 32: length, type, data
		n := s.uint(1 << (c - 0xc7))
		s.take(1)
		return item{kind: kindExt, data: s.take(n)}
	case c == 0xca:
		return item{kind: kindFloat, f: float64(math.Float32frombits(uint32(s.uint(4))))}
	case c == 0xcb:
		return item{kind: kindFloat, f: math.Float64frombits(s.uint(8))}
	case c >= 0xcc && c <= 0xcf: // uint 8, 16, 32, 64
		u := s.uint(1 << (c - 0xcc))
		if u > math.MaxInt64 {
			return item{kind: kindUint, u: u}
		}
		return item{kind: kindInt, i: int64(u)}
	case c >= 0xd0 && c <= 0xd3: // int 8, 16, 32, 64
		size := uint64(1) << (c - 0xd0)
		u := s.uint(size)
		// Sign-extend from the value's width.
		shift := 64 - 8*size
		return item{kind: kindInt, i: int64(u<<shift) >> shift}
	case c >= 0xd4 && c <= 0xd8: // fixext 1, 2, 4, 8, 16: type, data
		s.take(1)
		return item{kind: kindExt, data: s.take(1 << (c - 0xd4))}
	case c >= 0xd9 && c <= 0xdb: // str 8, 16, 32
		return item{kind: kindStr, data: s.take(s.uint(1 << (c - 0xd9)))}
	case c == 0xdc, c == 0xdd: // array 16, 32
		return item{kind: kindArray, n: s.uint(2 << (c - 0xdc))}
	case c == 0xde, c == 0xdf: // map 16, 32
		return item{kind: kindMap, n: s.uint(2 << (c - 0xde))}
	}
	s.fail() // 0xc1 is never used
	return item{}
}

// skip consumes the next value, elements included.
func (s *skim) skip() { s.skipRest(s.next()) }

// skipRest consumes the elements of an array or map whose header next
// returned; other values have none. It loops rather than recurses, so that
// nesting depth costs nothing.
func (s *skim) skipRest(it item) {
	var pending uint64
	switch it.kind {
	case kindArray:
		pending = it.n
	case kindMap:
		pending = 2 * it.n
	}
	for ; pending > 0 && s.err == nil; pending-- {
		switch e := s.next(); e.kind {
		case kindArray:
			pending += e.n
		case kindMap:
			pending += 2 * e.n
		}
	}
}

// str consumes a string.
func (s *skim) str() string { return string(s.strBytes()) }

// strBytes consumes a string and returns its bytes, aliasing the input:
// comparing a map key needs no copy.
func (s *skim) strBytes() []byte {
	it := s.next()
	if it.kind != kindStr {
		s.fail()
		return nil
	}
	return it.data
}

// mapLen consumes a map header; nil is an empty map.
func (s *skim) mapLen() uint64 {
	switch it := s.next(); it.kind {
	case kindMap:
		return it.n
	case kindNil:
		return 0
	}
	s.fail()
	return 0
}

// integer returns a number as an integer, a float truncated toward zero.
// ok is false for other kinds and for floats out of int64's range.
func (it item) integer() (n int64, ok bool) {
	switch it.kind {
	case kindInt:
		return it.i, true
	case kindFloat:
		if it.f >= math.MinInt64 && it.f < math.MaxInt64 {
			return int64(it.f), true
		}
	}
	return 0, false
}
