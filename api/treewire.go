package api

import (
	"encoding/binary"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/saver-dev/saver/tree"
)

// entryList is tree entries on the wire, as []tree.Entry in JSON. Its
// msgpack form is written by hand, the same map per entry that reflection
// writes: a live path of 10,000 nodes took 5.5 ms to encode by reflection,
// about a tenth of the query as the Python client sees it.
type entryList []tree.Entry

func (l entryList) EncodeMsgpack(enc *msgpack.Encoder) error {
	if l == nil {
		return enc.EncodeNil()
	}
	b := make([]byte, 0, 5+len(l)*200)
	b = appendArrayHeader(b, len(l))
	for i := range l {
		b = appendEntry(b, &l[i])
	}
	_, err := enc.Writer().Write(b)
	return err
}

// appendEntry appends e as a msgpack map under its fields' tag names.
func appendEntry(b []byte, e *tree.Entry) []byte {
	b = append(b, 0x80|11) // fixmap of 11
	b = appendStr(appendStr(b, "id"), e.ID)
	b = appendStr(appendStr(b, "ns"), e.NS)
	b = appendStr(appendStr(b, "parent"), e.Parent)
	b = appendStr(appendStr(b, "parent_ns"), e.ParentNS)
	b = appendStr(appendStr(b, "source"), e.Source)
	b = appendInt(appendStr(b, "step"), e.Step)
	b = appendStr(appendStr(b, "status"), string(e.Status))
	b = appendBool(appendStr(b, "has_error"), e.HasError)
	b = appendBool(appendStr(b, "has_interrupt"), e.HasInterrupt)
	b = appendBool(appendStr(b, "on_live_path"), e.OnLivePath)
	return appendBool(appendStr(b, "orphan"), e.Orphan)
}

func appendArrayHeader(b []byte, n int) []byte {
	switch {
	case n < 16:
		return append(b, 0x90|byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, 0xdc), uint16(n))
	default:
		return binary.BigEndian.AppendUint32(append(b, 0xdd), uint32(n))
	}
}

func appendStr(b []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n <= 0xff:
		b = append(b, 0xd9, byte(n))
	case n <= 0xffff:
		b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
	}
	return append(b, s...)
}

// appendInt appends n as a fixint when it is one, else as an int64.
func appendInt(b []byte, n int64) []byte {
	if n >= -32 && n <= 127 {
		return append(b, byte(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 0xc3)
	}
	return append(b, 0xc2)
}
