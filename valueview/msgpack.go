package valueview

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"
	"time"
)

// errMalformed is any msgpack that is not one whole, well-formed value. The
// caller shows such a value as Opaque rather than a guess at part of it.
var errMalformed = errors.New("malformed msgpack")

// mpReader walks msgpack by hand rather than through a library decoder:
// every length header is checked against the bytes that follow before
// anything is allocated, so a value allocates at most in proportion to its
// size, and the walk never recurses deeper than Limits.Depth.
type mpReader struct {
	b    []byte
	i    int
	left int // values that may still be decoded (Limits.Items)
	lim  Limits
}

// decodeMsgpack decodes b, which must hold exactly one value.
func decodeMsgpack(b []byte, lim Limits, left *int) (Value, error) {
	r := mpReader{b: b, left: *left, lim: lim}
	v, err := r.value(0)
	*left = r.left
	if err != nil {
		return Value{}, err
	}
	if r.i != len(b) {
		return Value{}, errMalformed
	}
	return v, nil
}

func (r *mpReader) rest() int { return len(r.b) - r.i }

// n reads an unsigned big-endian integer of size bytes.
func (r *mpReader) n(size int) (uint64, error) {
	if r.rest() < size {
		return 0, errMalformed
	}
	p := r.b[r.i : r.i+size]
	r.i += size
	switch size {
	case 1:
		return uint64(p[0]), nil
	case 2:
		return uint64(binary.BigEndian.Uint16(p)), nil
	case 4:
		return uint64(binary.BigEndian.Uint32(p)), nil
	}
	return binary.BigEndian.Uint64(p), nil
}

// bytes takes the next n bytes, which must be there.
func (r *mpReader) bytes(n uint64) ([]byte, error) {
	if n > uint64(r.rest()) {
		return nil, errMalformed
	}
	p := r.b[r.i : r.i+int(n)]
	r.i += int(n)
	return p, nil
}

// header reads the type byte and, for containers, strings, binaries and
// exts, the length that follows; ext is the ext type.
func (r *mpReader) header() (c byte, n uint64, ext int8, err error) {
	if r.rest() < 1 {
		return 0, 0, 0, errMalformed
	}
	c = r.b[r.i]
	r.i++
	switch {
	case c >= 0x80 && c <= 0x8f:
		return c, uint64(c & 0x0f), 0, nil
	case c >= 0x90 && c <= 0x9f:
		return c, uint64(c & 0x0f), 0, nil
	case c >= 0xa0 && c <= 0xbf:
		return c, uint64(c & 0x1f), 0, nil
	}
	size := 0
	switch c {
	case 0xc4, 0xd9:
		size = 1
	case 0xc5, 0xda, 0xdc, 0xde:
		size = 2
	case 0xc6, 0xdb, 0xdd, 0xdf:
		size = 4
	case 0xc7:
		size = 1
	case 0xc8:
		size = 2
	case 0xc9:
		size = 4
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8:
		n = 1 << (c - 0xd4)
	}
	if size > 0 {
		if n, err = r.n(size); err != nil {
			return 0, 0, 0, err
		}
	}
	if c >= 0xc7 && c <= 0xc9 || c >= 0xd4 && c <= 0xd8 {
		t, err := r.n(1)
		if err != nil {
			return 0, 0, 0, err
		}
		ext = int8(t)
	}
	return c, n, ext, nil
}

// skip passes one value without decoding it. It keeps a count of values
// still to pass instead of recursing, so any nesting is safe, and every
// value takes at least one byte, so a header cannot make it loop for long.
func (r *mpReader) skip() error {
	for pending := uint64(1); pending > 0; pending-- {
		c, n, _, err := r.header()
		if err != nil {
			return err
		}
		switch {
		case c >= 0x80 && c <= 0x8f || c == 0xde || c == 0xdf:
			pending += 2 * n
		case c >= 0x90 && c <= 0x9f || c == 0xdc || c == 0xdd:
			pending += n
		case c >= 0xa0 && c <= 0xbf || c >= 0xc4 && c <= 0xc9 || c >= 0xd4 && c <= 0xdb:
			if _, err := r.bytes(n); err != nil {
				return err
			}
		case c == 0xc1:
			return errMalformed
		default:
			if _, err := r.bytes(uint64(scalarSize(c))); err != nil {
				return err
			}
		}
		if pending > uint64(r.rest())+1 {
			return errMalformed // more values announced than bytes left
		}
	}
	return nil
}

// scalarSize is the payload size of a fixed-size scalar's type byte.
func scalarSize(c byte) int {
	switch c {
	case 0xcc, 0xd0:
		return 1
	case 0xcd, 0xd1:
		return 2
	case 0xca, 0xce, 0xd2:
		return 4
	case 0xcb, 0xcf, 0xd3:
		return 8
	}
	return 0
}

// value decodes one value at nesting depth.
func (r *mpReader) value(depth int) (Value, error) {
	start := r.i
	c, n, ext, err := r.header()
	if err != nil {
		return Value{}, err
	}
	r.left--
	switch {
	case c <= 0x7f:
		return num(strconv.Itoa(int(c))), nil
	case c >= 0xe0:
		return num(strconv.Itoa(int(int8(c)))), nil
	case c >= 0x80 && c <= 0x8f || c == 0xde || c == 0xdf:
		return r.container(Map, 2*n, depth, start)
	case c >= 0x90 && c <= 0x9f || c == 0xdc || c == 0xdd:
		return r.container(Array, n, depth, start)
	case c >= 0xa0 && c <= 0xbf || c >= 0xd9 && c <= 0xdb:
		p, err := r.bytes(n)
		return Value{Kind: String, Text: string(p)}, err
	case c >= 0xc4 && c <= 0xc6:
		p, err := r.bytes(n)
		return Value{Kind: Bytes, Size: len(p)}, err
	case c >= 0xc7 && c <= 0xc9 || c >= 0xd4 && c <= 0xd8:
		p, err := r.bytes(n)
		if err != nil {
			return Value{}, err
		}
		return r.ext(ext, p, depth)
	}
	switch c {
	case 0xc0:
		return Value{Kind: Null}, nil
	case 0xc2, 0xc3:
		return Value{Kind: Bool, Bool: c == 0xc3}, nil
	case 0xc1:
		return Value{}, errMalformed
	}
	u, err := r.n(scalarSize(c))
	if err != nil {
		return Value{}, err
	}
	switch c {
	case 0xca:
		return float(float64(math.Float32frombits(uint32(u))), 32), nil
	case 0xcb:
		return float(math.Float64frombits(u), 64), nil
	case 0xcc, 0xcd, 0xce, 0xcf:
		return num(strconv.FormatUint(u, 10)), nil
	case 0xd0:
		return num(strconv.Itoa(int(int8(u)))), nil
	case 0xd1:
		return num(strconv.Itoa(int(int16(u)))), nil
	case 0xd2:
		return num(strconv.Itoa(int(int32(u)))), nil
	}
	return num(strconv.FormatInt(int64(u), 10)), nil
}

func num(s string) Value { return Value{Kind: Number, Text: s} }

// float is a number as JSON writes it; NaN and infinities, which JSON has
// no number for, are written as Python spells them.
func float(f float64, bits int) Value {
	switch {
	case math.IsNaN(f):
		return num("NaN")
	case math.IsInf(f, 1):
		return num("Infinity")
	case math.IsInf(f, -1):
		return num("-Infinity")
	}
	return num(strconv.FormatFloat(f, 'g', -1, bits))
}

// container decodes n values (a map's keys and values count apart) into a
// Kind container: at most as many as the budget allows, the rest skipped
// and counted in a Cut. Past the depth limit the whole container is a Cut.
func (r *mpReader) container(k Kind, n uint64, depth, start int) (Value, error) {
	if n > uint64(r.rest()) {
		return Value{}, errMalformed // each value takes at least a byte
	}
	if depth >= r.lim.Depth {
		r.i = start
		if err := r.skip(); err != nil {
			return Value{}, err
		}
		return Value{Kind: Cut, Size: int(n)}, nil
	}
	v := Value{Kind: k}
	if n > 0 {
		v.Items = make([]Value, 0, min(n, uint64(max(r.left, 0))+1))
	}
	for i := uint64(0); i < n; i++ {
		if r.left <= 0 && (k != Map || i%2 == 0) {
			for j := i; j < n; j++ {
				if err := r.skip(); err != nil {
					return Value{}, err
				}
			}
			cut := n - i
			if k == Map {
				cut /= 2
			}
			v.Items = append(v.Items, Value{Kind: Cut, Size: int(cut)})
			if k == Map {
				v.Items = append(v.Items, Value{Kind: Cut})
			}
			return v, nil
		}
		e, err := r.value(depth + 1)
		if err != nil {
			return Value{}, err
		}
		v.Items = append(v.Items, e)
	}
	return v, nil
}

// ext decodes one of LangGraph's ext types, or names any other by code and
// size. The payload is msgpack of its own and shares the value budget.
func (r *mpReader) ext(code int8, p []byte, depth int) (Value, error) {
	opaque := Value{Kind: Opaque, Text: "msgpack ext " + strconv.Itoa(int(code)), Size: len(p)}
	if code == -1 {
		return timestamp(p, opaque), nil
	}
	if code < ExtConstructorSingleArg || code > ExtDeltaSnapshot {
		return opaque, nil
	}
	if depth >= r.lim.Depth {
		return Value{Kind: Cut}, nil
	}
	sub := mpReader{b: p, left: r.left, lim: r.lim}
	inner, err := sub.value(depth + 1)
	r.left = sub.left
	if err != nil || sub.i != len(p) {
		return opaque, nil
	}
	if code == ExtDeltaSnapshot {
		return inner, nil
	}
	if code == ExtNumpyArray {
		// (dtype, shape, order, buffer): shown as dtype and shape.
		if inner.Kind != Array || len(inner.Items) < 2 {
			return opaque, nil
		}
		return Value{Kind: Object, Module: "numpy", Name: "ndarray", Code: code,
			Items: []Value{{Kind: Array, Items: inner.Items[:2]}}}, nil
	}
	if inner.Kind != Array || len(inner.Items) < 3 ||
		inner.Items[0].Kind != String || inner.Items[1].Kind != String {
		return opaque, nil
	}
	return Value{Kind: Object, Module: inner.Items[0].Text, Name: inner.Items[1].Text, Code: code,
		Items: inner.Items[2:3]}, nil
}

// timestamp decodes msgpack's timestamp ext (-1) to RFC 3339 text.
func timestamp(p []byte, opaque Value) Value {
	var t time.Time
	switch len(p) {
	case 4:
		t = time.Unix(int64(binary.BigEndian.Uint32(p)), 0)
	case 8:
		u := binary.BigEndian.Uint64(p)
		t = time.Unix(int64(u&(1<<34-1)), int64(u>>34))
	case 12:
		t = time.Unix(int64(binary.BigEndian.Uint64(p[4:])), int64(binary.BigEndian.Uint32(p)))
	default:
		return opaque
	}
	return Value{Kind: Object, Module: "datetime", Name: "datetime", Code: -1,
		Items: []Value{{Kind: String, Text: t.UTC().Format(time.RFC3339Nano)}}}
}
