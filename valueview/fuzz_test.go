package valueview_test

import (
	"encoding/json"
	"testing"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/valueview"
)

// FuzzRender decodes and renders any bytes as msgpack and as JSON under
// small limits, and checks that the limits hold: the tree is no deeper than
// Depth, holds about Items values (a map's value in flight and the values
// opened on the way down may pass it by one each), and the text fits Bytes.
func FuzzRender(f *testing.F) {
	for _, v := range fixtures(f) {
		f.Add(v.Data, v.Type == "json", uint8(4), uint16(8), uint16(40))
	}
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff}, false, uint8(3), uint16(5), uint16(10))
	f.Add([]byte(`[[[[[[1]]]]]]`), true, uint8(2), uint16(5), uint16(3))
	f.Fuzz(func(t *testing.T, data []byte, isJSON bool, depth uint8, items, size uint16) {
		typ := "msgpack"
		if isJSON {
			typ = "json"
		}
		lim := valueview.Limits{Depth: int(depth % 20), Items: int(items % 500), Bytes: int(size % 2000)}
		v := valueview.Decode(saver.Typed{Type: typ, Data: data}, lim)
		if d := treeDepth(v); d > lim.Depth+1 {
			t.Errorf("tree %d deep, limit %d", d, lim.Depth)
		}
		if n := count(v); n > lim.Items+2*lim.Depth+2 {
			t.Errorf("%d values, limit %d", n, lim.Items)
		}
		out := valueview.Render(v, lim.Bytes)
		if lim.Bytes > 0 && len(out) > lim.Bytes {
			t.Errorf("%d bytes rendered, limit %d", len(out), lim.Bytes)
		}
		for _, m := range valueview.Messages(v) {
			if _, err := json.Marshal(m.Data.JSON()); err != nil {
				t.Errorf("message JSON: %v", err)
			}
		}
	})
}

// treeDepth counts the container levels of v.
func treeDepth(v valueview.Value) int {
	d := 0
	for _, e := range v.Items {
		d = max(d, treeDepth(e))
	}
	if len(v.Items) > 0 {
		d++
	}
	return d
}

// count counts v's decoded values: cuts stand for values left out.
func count(v valueview.Value) int {
	n := 1
	if v.Kind == valueview.Cut {
		n = 0
	}
	for _, e := range v.Items {
		n += count(e)
	}
	return n
}
