package metasize_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/internal/metasize"
)

// TestMeasure: stored metadata measures as the put that stored it did, so
// that whatever a put lets through a read decodes; past a limit it stops.
func TestMeasure(t *testing.T) {
	emptyMaps := func(n int) []any {
		l := make([]any, n)
		for i := range l {
			l[i] = map[string]any{}
		}
		return l
	}
	tests := []struct {
		name string
		md   saver.Metadata
	}{
		{"Empty", saver.Metadata{}},
		{"LangGraph", saver.Metadata{
			"source": "loop", "step": int64(-1), "run_id": "r", "parents": map[string]any{"": "c0"},
			"counters_since_delta_snapshot": map[string]any{"messages": int64(300)}, "score": 0.25, "ok": false, "none": nil,
			"big": int64(1) << 40, "neg": int64(-40000), "list": []any{"a", []any{}, map[string]any{"x": strings.Repeat("y", 300)}},
		}},
		{"LongStrings", saver.Metadata{strings.Repeat("k", 70000): strings.Repeat("v", 70000)}},
		{"AtTheLimit", saver.Metadata{"a": emptyMaps(saver.MaxMetadataValues - 2)}},
		{"OverTheLimit", saver.Metadata{"a": emptyMaps(4 * saver.MaxMetadataValues)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := msgpack.Marshal(map[string]any(tt.md))
			if err != nil {
				t.Fatal(err)
			}
			got, err := metasize.Measure(b)
			if err != nil {
				t.Fatalf("Measure: %v", err)
			}
			want := saver.MeasureMetadata(tt.md)
			if want.Over() {
				if !got.Over() {
					t.Fatalf("Measure = %+v, not over a limit; MeasureMetadata = %+v", got, want)
				}
				if got.Values > saver.MaxMetadataValues+1 {
					t.Fatalf("Measure read on to %d values past the limit", got.Values)
				}
				return
			}
			if got != want {
				t.Fatalf("Measure = %+v, MeasureMetadata = %+v", got, want)
			}
		})
	}
}

// TestMeasureMalformed: damaged bytes are an error, never a read past the
// end or a length believed.
func TestMeasureMalformed(t *testing.T) {
	for _, b := range [][]byte{
		{}, {0x81}, {0x81, 0xa1}, {0x81, 0x01, 0xc0}, {0xdf, 0xff, 0xff, 0xff, 0xff}, {0xdd, 0x7f, 0xff, 0xff, 0xff, 0xc0},
		{0xdb, 0xff, 0xff, 0xff, 0xff}, {0xc1}, {0xd4, 0x01, 0x01}, {0x80, 0x80},
		append(bytes.Repeat([]byte{0x91}, 100), 0xc0),
	} {
		if z, err := metasize.Measure(b); err == nil {
			t.Errorf("Measure(% x) = %+v, want an error", b, z)
		}
	}
}
