package api

// What a decoded value takes in Go's heap: what msgpack's and encoding/json's
// decoders allocate for it (go1.26; TestDecodedHeap measures bodies of every
// kind of element against the scanners' sums). The body scanners add these
// up before a decoder runs, so that a body is refused for what it would
// take, not for what it weighs: four million one-byte empty maps took 558 MB.
const (
	// ifaceBytes is an interface, the slot of an element of []any or a
	// value of map[string]any.
	ifaceBytes = 16
	// What an interface points to, beyond its slot, for a value other than
	// nil, a boolean or a small integer: a string's header, a slice's, a
	// boxed number (8 bytes, or 2, which take 16 where the race detector
	// turns off the allocator that packs them), an extension (time.Time).
	// The payload (payloadBytes) comes on top.
	boxedString = 16
	boxedSlice  = 24
	boxedNumber = 16
	boxedExt    = 32
	// anyEntryBytes is an entry of map[string]any: a string header and an
	// interface.
	anyEntryBytes = 32
)

// mapBytes is what a Go map of n entries of entry bytes each (key and value)
// takes: its header when empty; then one group of eight slots and their
// control bytes, in a size class up to a quarter larger; past eight
// entries, tables kept at most 7/8 full in powers of two, split at 1,024
// slots: at worst about three times the entries (91 bytes an entry of
// map[string]any at 449 entries, just past a doubling).
func mapBytes(n, entry int) int {
	switch {
	case n == 0:
		return 48
	case n <= 8:
		return 48 + (8+8*entry)*5/4
	}
	return 112 + 3*n*(entry+1)
}

// mapEntryBytes is what the jth entry (from 0) adds to a map's mapBytes, for
// a decoder that grows a map as its entries come (encoding/json).
func mapEntryBytes(j, entry int) int { return mapBytes(j+1, entry) - mapBytes(j, entry) }

// payloadBytes is what n bytes of a string or a byte slice take: their size
// class, up to an eighth more and at least 16 bytes, up to 32 KiB; a page
// more beyond.
func payloadBytes(n int) int {
	switch {
	case n == 0:
		return 0
	case n <= 32<<10:
		return n + n/8 + 16
	}
	return n + 8<<10
}
