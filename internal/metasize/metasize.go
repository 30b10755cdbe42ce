// Package metasize measures stored metadata, msgpack, in place: the stores
// look at what a record's metadata would take before they decode it.
package metasize

import (
	"encoding/binary"
	"errors"

	"github.com/saver-dev/saver"
)

var errMalformed = errors.New("malformed msgpack metadata")

// maxNesting is beyond what a put lets through (metadata nests at most 32
// levels), so that only damaged bytes reach it.
const maxNesting = 64

// Measure returns the size of msgpack-encoded metadata as
// saver.MeasureMetadata counts the decoded value, reading no further than
// the first limit it passes (saver.MetadataSize.Over), and allocating
// nothing.
func Measure(b []byte) (saver.MetadataSize, error) {
	m := measurer{b: b}
	if err := m.value(1); err != nil {
		return m.z, err
	}
	if !m.z.Over() && len(m.b) != 0 {
		return m.z, errMalformed
	}
	return m.z, nil
}

type measurer struct {
	b []byte
	z saver.MetadataSize
}

// take passes n bytes, which must be there.
func (m *measurer) take(n int) ([]byte, error) {
	if n < 0 || n > len(m.b) {
		return nil, errMalformed
	}
	p := m.b[:n]
	m.b = m.b[n:]
	return p, nil
}

// length reads an n-byte big-endian length.
func (m *measurer) length(n int) (int, error) {
	p, err := m.take(n)
	if err != nil {
		return 0, err
	}
	switch n {
	case 1:
		return int(p[0]), nil
	case 2:
		return int(binary.BigEndian.Uint16(p)), nil
	}
	return int(binary.BigEndian.Uint32(p)), nil
}

func (m *measurer) value(depth int) error {
	if m.z.Over() {
		return nil
	}
	if depth > maxNesting {
		return errMalformed
	}
	p, err := m.take(1)
	if err != nil {
		return err
	}
	c := p[0]
	var n int
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3: // fixints, nil, booleans
		m.z.Scalar()
		return nil
	case c <= 0x8f:
		return m.mapping(int(c&0x0f), depth)
	case c <= 0x9f:
		return m.array(int(c&0x0f), depth)
	case c <= 0xbf:
		return m.str(int(c & 0x1f))
	case c >= 0xca && c <= 0xd3: // floats, ints
		m.z.Scalar()
		_, err := m.take([...]int{4, 8, 1, 2, 4, 8, 1, 2, 4, 8}[c-0xca])
		return err
	case c == 0xd9 || c == 0xda || c == 0xdb: // str 8, 16, 32
		if n, err = m.length(1 << (c - 0xd9)); err != nil {
			return err
		}
		return m.str(n)
	case c == 0xc4 || c == 0xc5 || c == 0xc6: // bin, which metadata never holds: a string's size
		if n, err = m.length(1 << (c - 0xc4)); err != nil {
			return err
		}
		return m.str(n)
	case c == 0xdc || c == 0xdd:
		if n, err = m.length(2 << (c - 0xdc)); err != nil {
			return err
		}
		return m.array(n, depth)
	case c == 0xde || c == 0xdf:
		if n, err = m.length(2 << (c - 0xde)); err != nil {
			return err
		}
		return m.mapping(n, depth)
	}
	return errMalformed // extensions: never in metadata
}

func (m *measurer) str(n int) error {
	m.z.String(n)
	_, err := m.take(n)
	return err
}

func (m *measurer) array(n, depth int) error {
	if n > len(m.b) {
		return errMalformed
	}
	m.z.List(n)
	for i := 0; i < n && !m.z.Over(); i++ {
		if err := m.value(depth + 1); err != nil {
			return err
		}
	}
	return nil
}

func (m *measurer) mapping(n, depth int) error {
	if 2*n > len(m.b) {
		return errMalformed
	}
	m.z.Map(n)
	for i := 0; i < n && !m.z.Over(); i++ {
		if err := m.key(); err != nil {
			return err
		}
		if err := m.value(depth + 1); err != nil {
			return err
		}
	}
	return nil
}

// key passes a map key, a string.
func (m *measurer) key() error {
	p, err := m.take(1)
	if err != nil {
		return err
	}
	var n int
	switch c := p[0]; {
	case c >= 0xa0 && c <= 0xbf:
		n = int(c & 0x1f)
	case c >= 0xd9 && c <= 0xdb:
		if n, err = m.length(1 << (c - 0xd9)); err != nil {
			return err
		}
	default:
		return errMalformed
	}
	m.z.Key(n)
	_, err = m.take(n)
	return err
}
