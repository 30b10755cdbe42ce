package api

import (
	"encoding/binary"
	"encoding/json"

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

// entryColumns is tree entries transposed, as the answer's "columns" when a
// client asks for layout=columns: one array per field, under the field's
// name, each entry at the same index in every array. A client that makes
// objects of its own from the entries (Python's TreeNode) decodes eleven
// arrays far faster than one map per entry, and the body is half the size:
// a live path of 10,000 nodes took 15 ms to unpack as maps in the Python
// client and 3.7 ms as columns, and 0.93 MB against 1.86.
type entryColumns []tree.Entry

// columnNames are the arrays of entryColumns, in the order they are written.
var columnNames = [...]string{
	"id", "ns", "parent", "parent_ns", "source", "step", "status",
	"has_error", "has_interrupt", "on_live_path", "orphan",
}

func (l entryColumns) EncodeMsgpack(enc *msgpack.Encoder) error {
	b := make([]byte, 0, 64+len(l)*100)
	b = append(b, 0x80|byte(len(columnNames)))
	for col, name := range columnNames {
		b = appendArrayHeader(appendStr(b, name), len(l))
		for i := range l {
			b = appendColumn(b, col, &l[i])
		}
	}
	_, err := enc.Writer().Write(b)
	return err
}

// appendColumn appends e's value of the column numbered col in columnNames.
func appendColumn(b []byte, col int, e *tree.Entry) []byte {
	switch col {
	case 0:
		return appendStr(b, e.ID)
	case 1:
		return appendStr(b, e.NS)
	case 2:
		return appendStr(b, e.Parent)
	case 3:
		return appendStr(b, e.ParentNS)
	case 4:
		return appendStr(b, e.Source)
	case 5:
		return appendInt(b, e.Step)
	case 6:
		return appendStr(b, string(e.Status))
	case 7:
		return appendBool(b, e.HasError)
	case 8:
		return appendBool(b, e.HasInterrupt)
	case 9:
		return appendBool(b, e.OnLivePath)
	default:
		return appendBool(b, e.Orphan)
	}
}

// columnsJSON is entryColumns in JSON, by reflection: a JSON client pays
// its parse whatever the layout.
type columnsJSON struct {
	ID           []string      `json:"id"`
	NS           []string      `json:"ns"`
	Parent       []string      `json:"parent"`
	ParentNS     []string      `json:"parent_ns"`
	Source       []string      `json:"source"`
	Step         []int64       `json:"step"`
	Status       []tree.Status `json:"status"`
	HasError     []bool        `json:"has_error"`
	HasInterrupt []bool        `json:"has_interrupt"`
	OnLivePath   []bool        `json:"on_live_path"`
	Orphan       []bool        `json:"orphan"`
}

func (l entryColumns) MarshalJSON() ([]byte, error) {
	n := len(l)
	c := columnsJSON{
		ID: make([]string, n), NS: make([]string, n), Parent: make([]string, n),
		ParentNS: make([]string, n), Source: make([]string, n), Step: make([]int64, n),
		Status: make([]tree.Status, n), HasError: make([]bool, n), HasInterrupt: make([]bool, n),
		OnLivePath: make([]bool, n), Orphan: make([]bool, n),
	}
	for i, e := range l {
		c.ID[i], c.NS[i], c.Parent[i], c.ParentNS[i], c.Source[i] = e.ID, e.NS, e.Parent, e.ParentNS, e.Source
		c.Step[i], c.Status[i] = e.Step, e.Status
		c.HasError[i], c.HasInterrupt[i], c.OnLivePath[i], c.Orphan[i] = e.HasError, e.HasInterrupt, e.OnLivePath, e.Orphan
	}
	return json.Marshal(c)
}
