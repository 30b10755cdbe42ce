package api

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// What the body scanners (msgpackscan.go, jsonscan.go) share: the nesting
// limit, the decoded-size budget, their error, and the set that finds a key
// given twice.

// maxNesting bounds how deep arrays and maps nest in a body, in both codecs:
// far above what LangGraph sends (metadata holds at most 32 levels, and a
// request wraps it in two), and low enough that no decoder's recursion can
// exhaust a stack.
const maxNesting = 64

// scanError is a problem a body scanner found: what, at which byte, and
// where in the body's structure (field names and indices, outermost first).
type scanError struct {
	msg  string
	off  int
	path []string
	// tooLarge: the body is well formed but would decode to more than its
	// budget (decodeBudget).
	tooLarge bool
}

// decodeBudget is the most a body of n bytes may take once decoded: a body's
// elements can decode to many times their encoded size (a one-byte nil to a
// 96-byte saver.Write, a one-byte empty map to a 64-byte map in an
// interface), so a 4 MB body of them once cost 777 MB.
func decodeBudget(n int) int { return 64<<20 + 2*n }

// maxBodyValues bounds the values a body holds (maps, arrays and scalars at
// every level, map keys aside): each is at least one object the decoder
// allocates and the collector then walks. A put of ten thousand blobs holds
// about fifty thousand.
const maxBodyValues = 1 << 20

// budget counts the decoded size of a body and its values as a scanner
// walks it.
type budget struct{ spent, limit, values int }

// spend adds n bytes and reports the overrun as a scanError at off.
func (b *budget) spend(n, off int) error {
	b.spent += n
	if b.spent > b.limit {
		return &scanError{msg: fmt.Sprintf("would take over %d MB once decoded", b.limit>>20), off: off, tooLarge: true}
	}
	return nil
}

// value counts one value, at off.
func (b *budget) value(off int) error {
	b.values++
	if b.values > maxBodyValues {
		return &scanError{msg: fmt.Sprintf("holds over %d values", maxBodyValues), off: off, tooLarge: true}
	}
	return nil
}

func (e *scanError) Error() string {
	if len(e.path) == 0 {
		return fmt.Sprintf("%s at byte %d", e.msg, e.off)
	}
	var b strings.Builder
	for i, p := range e.path {
		if i == 16 { // a path as deep as the nesting limit says no more
			b.WriteString("…")
			break
		}
		if i > 0 && !strings.HasPrefix(p, "[") {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return fmt.Sprintf("%s at %s (byte %d)", e.msg, b.String(), e.off)
}

// in prefixes err's path with seg as the error leaves a container. Long keys
// are cut: the message echoes what the caller sent.
func in(err error, seg string) error {
	if n := 64; len(seg) > n {
		for n > 0 && !utf8.RuneStart(seg[n]) {
			n--
		}
		seg = seg[:n] + "…"
	}
	if se, ok := err.(*scanError); ok {
		se.path = append([]string{seg}, se.path...)
	}
	return err
}

// keySet finds a map key given twice: by comparison while a map has few
// keys, as most have, by a set beyond that. It holds the keys as slices of
// the body and grows with the keys actually read, never past fewKeys by a
// header's count.
type keySet struct {
	few  []bodyKey
	many map[mapKey]struct{}
}

// bodyKey is a key's text in the body and whether it was a string, so that
// the string "\x01" and the integer 1 stay apart.
type bodyKey struct {
	b     []byte
	isStr bool
}

type mapKey struct {
	s     string
	isStr bool
}

const fewKeys = 32

// newKeySet returns a set for a map whose header claims n keys.
func newKeySet(n int) keySet { return keySet{few: make([]bodyKey, 0, min(n, fewKeys))} }

// add records a key and reports whether it was already there.
func (k *keySet) add(b []byte, isStr bool) bool {
	if k.many != nil {
		key := mapKey{string(b), isStr}
		if _, dup := k.many[key]; dup {
			return true
		}
		k.many[key] = struct{}{}
		return false
	}
	for _, seen := range k.few {
		if seen.isStr == isStr && bytes.Equal(seen.b, b) {
			return true
		}
	}
	k.few = append(k.few, bodyKey{b, isStr})
	if len(k.few) > fewKeys {
		k.many = make(map[mapKey]struct{}, 2*len(k.few))
		for _, seen := range k.few {
			k.many[mapKey{string(seen.b), seen.isStr}] = struct{}{}
		}
		k.few = nil
	}
	return false
}
