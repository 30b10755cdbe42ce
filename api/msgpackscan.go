package api

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// scanMsgpack checks that b is one msgpack value of shape s, without
// decoding it: every length header fits in the bytes that follow (an array
// element takes at least one byte, a map entry two), nesting stays within
// maxNesting, no map repeats a key, structs are maps with their exact field
// names. Only then may a decoder allocate by those headers: the library
// trusts them, and 5 bytes claiming 2^31 elements once exhausted the memory.
// It returns what the body takes once decoded (cost.go), within
// decodeBudget and maxBodyValues.
func scanMsgpack(b []byte, s *shape) (int, error) {
	sc := mpScanner{b: b, budget: budget{limit: decodeBudget(len(b))}}
	if err := sc.value(s, 1); err != nil {
		return 0, err
	}
	if sc.i != len(b) {
		return 0, &scanError{msg: "trailing data after the first value", off: sc.i}
	}
	return sc.spent, nil
}

type mpScanner struct {
	b []byte
	i int
	budget
}

func (sc *mpScanner) fail(format string, args ...any) error {
	return &scanError{msg: fmt.Sprintf(format, args...), off: sc.i}
}

func (sc *mpScanner) rest() int { return len(sc.b) - sc.i }

// uint reads an n-byte big-endian length.
func (sc *mpScanner) uint(n int) (int, error) {
	if sc.rest() < n {
		return 0, sc.fail("truncated header")
	}
	var v uint64
	switch n {
	case 1:
		v = uint64(sc.b[sc.i])
	case 2:
		v = uint64(binary.BigEndian.Uint16(sc.b[sc.i:]))
	case 4:
		v = uint64(binary.BigEndian.Uint32(sc.b[sc.i:]))
	}
	sc.i += n
	return int(v), nil
}

// skip passes n bytes of payload, which must be there.
func (sc *mpScanner) skip(n int, what string) error {
	if n > sc.rest() {
		return sc.fail("%s of %d bytes, but only %d bytes follow", what, n, sc.rest())
	}
	sc.i += n
	return nil
}

// value scans one value of shape s at nesting depth.
func (sc *mpScanner) value(s *shape, depth int) error {
	if sc.rest() < 1 {
		return sc.fail("truncated body")
	}
	c := sc.b[sc.i]
	start := sc.i
	if err := sc.budget.value(start); err != nil {
		return err
	}
	sc.i++
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc2 || c == 0xc3: // fixints, false, true: no allocation
		return sc.scalar(s, start)
	case c == 0xc0: // nil: the zero value of any shape
		return nil
	case c <= 0x8f:
		return sc.mapping(s, int(c&0x0f), depth, start)
	case c <= 0x9f:
		return sc.array(s, int(c&0x0f), depth, start)
	case c <= 0xbf:
		return sc.str(s, int(c&0x1f), start)
	}
	var n int
	var err error
	switch c {
	case 0xc4, 0xc5, 0xc6: // bin 8, 16, 32
		if n, err = sc.uint(1 << (c - 0xc4)); err != nil {
			return err
		}
		if err := sc.skip(n, "bytes"); err != nil {
			return err
		}
		if err := sc.spend(payloadBytes(n)+boxed(s, boxedSlice), start); err != nil {
			return err
		}
		if s.kind == shapeSlice && s.bin {
			if n%s.slot != 0 {
				sc.i = start
				return sc.fail("%d bytes are not whole elements of %d bytes", n, s.slot)
			}
			// Decoded twice: the bytes, then the elements made of them.
			return sc.spend(payloadBytes(n), start)
		}
		return sc.scalar(s, start)
	case 0xc7, 0xc8, 0xc9: // ext 8, 16, 32: length, type, data
		if n, err = sc.uint(1 << (c - 0xc7)); err != nil {
			return err
		}
		return sc.ext(s, n, start)
	case 0xca, 0xcb, 0xcc, 0xcd, 0xce, 0xcf, 0xd0, 0xd1, 0xd2, 0xd3: // floats, ints
		size := [...]int{4, 8, 1, 2, 4, 8, 1, 2, 4, 8}[c-0xca]
		if err := sc.skip(size, "number"); err != nil {
			return err
		}
		if err := sc.spend(boxed(s, boxedNumber), start); err != nil {
			return err
		}
		return sc.scalar(s, start)
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1..16: type, data
		return sc.ext(s, 1<<(c-0xd4), start)
	case 0xd9, 0xda, 0xdb: // str 8, 16, 32
		if n, err = sc.uint(1 << (c - 0xd9)); err != nil {
			return err
		}
		return sc.str(s, n, start)
	case 0xdc, 0xdd: // array 16, 32
		if n, err = sc.uint(2 << (c - 0xdc)); err != nil {
			return err
		}
		return sc.array(s, n, depth, start)
	case 0xde, 0xdf: // map 16, 32
		if n, err = sc.uint(2 << (c - 0xde)); err != nil {
			return err
		}
		return sc.mapping(s, n, depth, start)
	}
	sc.i = start
	return sc.fail("byte 0x%02x starts no msgpack value", c)
}

// scalar refuses a scalar where the shape wants a map or an array.
func (sc *mpScanner) scalar(s *shape, start int) error {
	if s.kind == shapeAny {
		return nil
	}
	sc.i = start
	return sc.fail("want %s, got a scalar", s.kind.wire())
}

// boxed is what an interface allocates for a value of b bytes besides its
// payload; nothing where s is a typed field, which holds the value in place.
func boxed(s *shape, b int) int {
	if s.boxed {
		return b
	}
	return 0
}

func (sc *mpScanner) str(s *shape, n, start int) error {
	if err := sc.skip(n, "string"); err != nil {
		return err
	}
	if err := sc.spend(payloadBytes(n)+boxed(s, boxedString), start); err != nil {
		return err
	}
	return sc.scalar(s, start)
}

// ext passes an extension's type byte and its n bytes of data.
func (sc *mpScanner) ext(s *shape, n, start int) error {
	if err := sc.skip(1+n, "extension"); err != nil {
		return err
	}
	if err := sc.spend(payloadBytes(n)+boxed(s, boxedExt), start); err != nil {
		return err
	}
	return sc.scalar(s, start)
}

func (sc *mpScanner) array(s *shape, n, depth, start int) error {
	if s.kind == shapeStruct || s.kind == shapeMap {
		sc.i = start
		return sc.fail("want a map, got an array")
	}
	if depth > maxNesting {
		return sc.fail("nested deeper than %d levels", maxNesting)
	}
	if n > sc.rest() {
		return sc.fail("array of %d elements, but only %d bytes follow", n, sc.rest())
	}
	// A slice's elements in place; an interface's []any and its header.
	elem, size := ifaceShape, boxedSlice+n*ifaceBytes
	if s.kind == shapeSlice {
		elem, size = s.elem, n*s.slot
	}
	if err := sc.spend(size, start); err != nil {
		return err
	}
	for j := 0; j < n; j++ {
		if err := sc.value(elem, depth+1); err != nil {
			return in(err, "["+strconv.Itoa(j)+"]")
		}
	}
	return nil
}

func (sc *mpScanner) mapping(s *shape, n, depth, start int) (err error) {
	if s.kind == shapeSlice {
		sc.i = start
		return sc.fail("want an array, got a map")
	}
	if depth > maxNesting {
		return sc.fail("nested deeper than %d levels", maxNesting)
	}
	if 2*n > sc.rest() {
		return sc.fail("map of %d entries, but only %d bytes follow", n, sc.rest())
	}
	// A struct's fields are in place; a map allocates its tables, and each
	// string key its bytes.
	switch s.kind {
	case shapeAny:
		err = sc.spend(mapBytes(n, anyEntryBytes), start)
	case shapeMap:
		err = sc.spend(mapBytes(n, s.slot), start)
	}
	if err != nil {
		return err
	}
	keys := newKeySet(n)
	for j := 0; j < n; j++ {
		key, isStr, err := sc.key(depth)
		if err != nil {
			return err
		}
		if !isStr && s.kind != shapeAny {
			return sc.fail("a map key is not a string")
		}
		if keys.add(key, isStr) {
			return sc.fail("key %.64q is given twice", key)
		}
		if s.kind != shapeStruct {
			if err := sc.spend(payloadBytes(len(key)), start); err != nil {
				return err
			}
		}
		elem := ifaceShape
		switch s.kind {
		case shapeStruct:
			f, ok := s.fields[string(key)]
			if !ok {
				return sc.fail("unknown field %.64q", key)
			}
			elem = f
		case shapeMap:
			elem = s.elem
		}
		if err := sc.value(elem, depth+1); err != nil {
			return in(err, string(key))
		}
	}
	return nil
}

// key scans a map key. A string key comes back as its text, whatever its
// encoding (fixstr or str 8/16/32), so "a" written two ways is one key; any
// other key as its encoded bytes.
func (sc *mpScanner) key(depth int) ([]byte, bool, error) {
	start := sc.i
	if sc.rest() >= 1 {
		c := sc.b[sc.i]
		var n, hdr int
		switch {
		case c >= 0xa0 && c <= 0xbf:
			n, hdr = int(c&0x1f), 1
		case c >= 0xd9 && c <= 0xdb:
			sc.i++
			l, err := sc.uint(1 << (c - 0xd9))
			if err != nil {
				return nil, false, err
			}
			sc.i = start
			n, hdr = l, 1+1<<(c-0xd9)
		}
		if hdr > 0 {
			sc.i += hdr
			if err := sc.skip(n, "string"); err != nil {
				return nil, false, err
			}
			return sc.b[start+hdr : sc.i], true, nil
		}
	}
	if err := sc.value(anyShape, depth+1); err != nil {
		return nil, false, err
	}
	return sc.b[start:sc.i], false, nil
}

func (k shapeKind) wire() string {
	switch k {
	case shapeStruct, shapeMap:
		return "a map"
	case shapeSlice:
		return "an array"
	}
	return "a value"
}
