package embedded

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// Key components are escaped so that a component never contains the
// separator: 0x00 becomes 0x01 0x01 and 0x01 becomes 0x01 0x02. Every
// component, the last included, is followed by the separator 0x00. Since the
// separator is smaller than any byte of an escaped component, byte order of
// keys is tuple order (component by component, each in byte order), and the
// key of a tuple prefix is a byte prefix of the keys of exactly the tuples
// that extend it.
const (
	sep      = 0x00
	esc      = 0x01
	escSep   = 0x01 // esc escSep stands for 0x00
	escEsc   = 0x02 // esc escEsc stands for 0x01
	idxBytes = 8
)

var errBadKey = errors.New("malformed key")

// appendKey appends the key of the tuple parts to dst.
func appendKey(dst []byte, parts ...string) []byte {
	for _, p := range parts {
		dst = appendComponent(dst, p)
	}
	return dst
}

func appendComponent(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case sep:
			dst = append(dst, esc, escSep)
		case esc:
			dst = append(dst, esc, escEsc)
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, sep)
}

// key returns the key of the tuple parts.
func key(parts ...string) []byte { return appendKey(nil, parts...) }

// nextComponent decodes the first component of k and returns it with the
// rest of k after its separator.
func nextComponent(k []byte) (string, []byte, error) {
	end := bytes.IndexByte(k, sep)
	if end < 0 {
		return "", nil, errBadKey
	}
	raw := k[:end]
	if bytes.IndexByte(raw, esc) < 0 {
		return string(raw), k[end+1:], nil
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		if raw[i] != esc {
			out = append(out, raw[i])
			continue
		}
		i++
		if i == len(raw) {
			return "", nil, errBadKey
		}
		switch raw[i] {
		case escSep:
			out = append(out, sep)
		case escEsc:
			out = append(out, esc)
		default:
			return "", nil, errBadKey
		}
	}
	return string(out), k[end+1:], nil
}

// parseKey decodes the n components of k.
func parseKey(k []byte, n int) ([]string, error) {
	parts := make([]string, n)
	for i := range parts {
		var err error
		if parts[i], k, err = nextComponent(k); err != nil {
			return nil, err
		}
	}
	if len(k) != 0 {
		return nil, errBadKey
	}
	return parts, nil
}

// prefixEnd returns the smallest key greater than every key that starts
// with prefix, which ends with a separator: the prefix with that separator
// raised to 0x01. Such keys have the separator at that position, and any
// larger key differs at or before it.
func prefixEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	end[len(end)-1] = sep + 1
	return end
}

// idxComponent encodes a write's idx as 8 bytes whose byte order is the
// numeric order: big-endian with the sign bit flipped.
func idxComponent(idx int64) string {
	var b [idxBytes]byte
	binary.BigEndian.PutUint64(b[:], uint64(idx)^(1<<63))
	return string(b[:])
}

func parseIdx(s string) (int64, error) {
	if len(s) != idxBytes {
		return 0, errBadKey
	}
	return int64(binary.BigEndian.Uint64([]byte(s)) ^ (1 << 63)), nil
}
