package saver

import "fmt"

// Limits on a checkpoint's metadata. Every read decodes it (a get, each
// checkpoint a listing or a filtered search passes), so what a put may
// store is what a read can afford: twelve stored bodies of four million
// empty maps once made every search run out of memory. LangGraph writes a
// few dozen values (source, step, run_id, parents, the run's scalar config
// and metadata, counters_since_delta_snapshot); a filter is held to the
// same limits.
const (
	// MaxMetadataValues bounds the values of metadata: maps, lists and
	// scalars at every level, map keys aside.
	MaxMetadataValues = 10_000
	// MaxMetadataBytes bounds what metadata takes in memory once decoded,
	// as MetadataSize counts it.
	MaxMetadataBytes = 1 << 20
)

// MetadataSize is the size of a metadata tree: its values, and about what
// it takes in memory once decoded (Go's heap on a 64-bit machine): 16
// bytes an interface for every value, a map's tables at 80 bytes an entry
// past its 48-byte header, a list's 24-byte header, a string's or key's
// 16-byte header and its bytes, 8 a number. Stores measure stored metadata
// with it before decoding it.
type MetadataSize struct{ Values, Bytes int }

// Map counts a map of n entries; its keys and values are counted apart.
func (z *MetadataSize) Map(n int) { z.value(48 + 80*n) }

// List counts a list of n elements, which are counted apart.
func (z *MetadataSize) List(n int) { z.value(24) }

// String counts a string value of n bytes.
func (z *MetadataSize) String(n int) { z.value(16 + n) }

// Key counts a map key of n bytes, which is no value of its own.
func (z *MetadataSize) Key(n int) { z.Bytes += n }

// Scalar counts nil, a boolean or a number.
func (z *MetadataSize) Scalar() { z.value(8) }

func (z *MetadataSize) value(n int) { z.Values, z.Bytes = z.Values+1, z.Bytes+16+n }

// Over reports whether the size passes a limit: a measure may stop there.
func (z MetadataSize) Over() bool { return z.Values > MaxMetadataValues || z.Bytes > MaxMetadataBytes }

// Check is ETOOLARGE for a size past a limit, naming what (metadata, a
// filter).
func (z MetadataSize) Check(what string) error {
	switch {
	case z.Values > MaxMetadataValues:
		return Errorf(ETOOLARGE, "%s holds more than the %s values allowed.", what, thousands(MaxMetadataValues))
	case z.Bytes > MaxMetadataBytes:
		return Errorf(ETOOLARGE, "%s takes more than the %s bytes allowed once decoded.", what, thousands(MaxMetadataBytes))
	}
	return nil
}

// MeasureMetadata measures normalised metadata (NormalizeMetadata), up to
// the first limit it passes.
func MeasureMetadata(md Metadata) MetadataSize {
	var z MetadataSize
	measure(&z, map[string]any(md))
	return z
}

func measure(z *MetadataSize, v any) {
	if z.Over() {
		return
	}
	switch v := v.(type) {
	case string:
		z.String(len(v))
	case []any:
		z.List(len(v))
		for _, e := range v {
			measure(z, e)
		}
	case map[string]any:
		z.Map(len(v))
		for k, e := range v {
			z.Key(len(k))
			measure(z, e)
		}
	default:
		z.Scalar()
	}
}

// thousands writes n with commas: 10,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
