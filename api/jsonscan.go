package api

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// scanJSON checks that b is one JSON value of shape s before encoding/json
// decodes it, for what that decoder lets through: bytes that are not UTF-8
// and \u escapes that are no character (lone surrogates), which it turns into
// U+FFFD so that two different ids arrive as one; field names in another
// case, which it matches; keys given twice, of which it keeps the last; and
// nesting beyond maxNesting. What it accepts is valid JSON (FuzzScanJSON).
// It returns what the body takes once decoded (cost.go), within
// decodeBudget and maxBodyValues.
func scanJSON(b []byte, s *shape) (int, error) {
	if !utf8.Valid(b) {
		off := 0
		for off < len(b) {
			r, n := utf8.DecodeRune(b[off:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			off += n
		}
		return 0, &scanError{msg: "bytes that are not UTF-8", off: off}
	}
	sc := jsScanner{b: b, budget: budget{limit: decodeBudget(len(b))}}
	sc.space()
	if err := sc.value(s, 1); err != nil {
		return 0, err
	}
	sc.space()
	if sc.i != len(b) {
		return 0, sc.fail("trailing data after the first value")
	}
	return sc.spent, nil
}

type jsScanner struct {
	b []byte
	i int
	budget
}

func (sc *jsScanner) fail(format string, args ...any) error {
	return &scanError{msg: fmt.Sprintf(format, args...), off: sc.i}
}

func (sc *jsScanner) space() {
	for sc.i < len(sc.b) {
		switch sc.b[sc.i] {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return
		}
	}
}

func (sc *jsScanner) value(s *shape, depth int) error {
	if sc.i >= len(sc.b) {
		return sc.fail("truncated body")
	}
	if err := sc.budget.value(sc.i); err != nil {
		return err
	}
	switch c := sc.b[sc.i]; c {
	case '{':
		return sc.object(s, depth)
	case '[':
		return sc.array(s, depth)
	case 'n':
		return sc.literal("null")
	case 't', 'f':
		if err := sc.scalar(s); err != nil {
			return err
		}
		if c == 't' {
			return sc.literal("true")
		}
		return sc.literal("false")
	case '"':
		if err := sc.scalar(s); err != nil {
			return err
		}
		start := sc.i
		if _, _, err := sc.str(); err != nil {
			return err
		}
		return sc.spend(payloadBytes(sc.i-start)+boxed(s, boxedString), start)
	default:
		if c != '-' && (c < '0' || c > '9') {
			return sc.fail("character %q starts no JSON value", c)
		}
		if err := sc.scalar(s); err != nil {
			return err
		}
		start := sc.i
		if err := sc.number(); err != nil {
			return err
		}
		// An interface holds a json.Number: a string of the digits.
		return sc.spend(boxed(s, boxedString+payloadBytes(sc.i-start)), start)
	}
}

// number scans -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?.
func (sc *jsScanner) number() error {
	digits := func() int {
		n := 0
		for sc.i < len(sc.b) && sc.b[sc.i] >= '0' && sc.b[sc.i] <= '9' {
			sc.i++
			n++
		}
		return n
	}
	if sc.b[sc.i] == '-' {
		sc.i++
	}
	switch {
	case sc.i < len(sc.b) && sc.b[sc.i] == '0':
		sc.i++
	case digits() == 0:
		return sc.fail("malformed number")
	}
	if sc.i < len(sc.b) && sc.b[sc.i] == '.' {
		sc.i++
		if digits() == 0 {
			return sc.fail("malformed number")
		}
	}
	if sc.i < len(sc.b) && (sc.b[sc.i] == 'e' || sc.b[sc.i] == 'E') {
		sc.i++
		if sc.i < len(sc.b) && (sc.b[sc.i] == '+' || sc.b[sc.i] == '-') {
			sc.i++
		}
		if digits() == 0 {
			return sc.fail("malformed number")
		}
	}
	return nil
}

func (sc *jsScanner) scalar(s *shape) error {
	if s.kind == shapeAny {
		return nil
	}
	want := "an object"
	if s.kind == shapeSlice {
		want = "an array"
	}
	return sc.fail("want %s, got a scalar", want)
}

func (sc *jsScanner) literal(want string) error {
	if len(sc.b)-sc.i < len(want) || string(sc.b[sc.i:sc.i+len(want)]) != want {
		return sc.fail("invalid literal")
	}
	sc.i += len(want)
	return nil
}

func (sc *jsScanner) array(s *shape, depth int) error {
	if s.kind == shapeStruct || s.kind == shapeMap {
		return sc.fail("want an object, got an array")
	}
	if depth > maxNesting {
		return sc.fail("nested deeper than %d levels", maxNesting)
	}
	// encoding/json appends: a slice's capacity is up to twice its
	// elements. An interface's []any has a header besides.
	elem, slot := ifaceShape, 2*ifaceBytes
	if s.kind == shapeSlice {
		elem, slot = s.elem, 2*s.slot
	} else if err := sc.spend(boxedSlice, sc.i); err != nil {
		return err
	}
	sc.i++ // [
	sc.space()
	if sc.i < len(sc.b) && sc.b[sc.i] == ']' {
		sc.i++
		return nil
	}
	for j := 0; ; j++ {
		sc.space()
		if err := sc.spend(slot, sc.i); err != nil {
			return err
		}
		if err := sc.value(elem, depth+1); err != nil {
			return in(err, "["+strconv.Itoa(j)+"]")
		}
		sc.space()
		if sc.i >= len(sc.b) {
			return sc.fail("truncated array")
		}
		switch sc.b[sc.i] {
		case ',':
			sc.i++
		case ']':
			sc.i++
			return nil
		default:
			return sc.fail("want , or ] in an array")
		}
	}
}

func (sc *jsScanner) object(s *shape, depth int) error {
	if s.kind == shapeSlice {
		return sc.fail("want an array, got an object")
	}
	if depth > maxNesting {
		return sc.fail("nested deeper than %d levels", maxNesting)
	}
	// A struct's fields are in place; a map grows its tables as entries
	// come, and each key takes its bytes.
	entry := -1
	switch s.kind {
	case shapeAny:
		entry = anyEntryBytes
	case shapeMap:
		entry = s.slot
	}
	if entry >= 0 {
		if err := sc.spend(mapBytes(0, entry), sc.i); err != nil {
			return err
		}
	}
	sc.i++ // {
	sc.space()
	if sc.i < len(sc.b) && sc.b[sc.i] == '}' {
		sc.i++
		return nil
	}
	var keys keySet
	for j := 0; ; j++ {
		sc.space()
		if sc.i >= len(sc.b) || sc.b[sc.i] != '"' {
			return sc.fail("want a string key in an object")
		}
		at := sc.i
		raw, escaped, err := sc.str()
		if err != nil {
			return err
		}
		key := raw
		if escaped {
			var k string
			if err := json.Unmarshal(sc.b[at:sc.i], &k); err != nil {
				return &scanError{msg: "malformed key", off: at}
			}
			key = []byte(k)
		}
		if entry >= 0 {
			if err := sc.spend(mapEntryBytes(j, entry)+payloadBytes(len(key)), at); err != nil {
				return err
			}
		}
		if keys.add(key, true) {
			return &scanError{msg: fmt.Sprintf("key %.64q is given twice", key), off: at}
		}
		elem := ifaceShape
		switch s.kind {
		case shapeStruct:
			f, ok := s.fields[string(key)]
			if !ok {
				return &scanError{msg: fmt.Sprintf("unknown field %.64q (names are case-sensitive)", key), off: at}
			}
			elem = f
		case shapeMap:
			elem = s.elem
		}
		sc.space()
		if sc.i >= len(sc.b) || sc.b[sc.i] != ':' {
			return sc.fail("want : after an object key")
		}
		sc.i++
		sc.space()
		if err := sc.value(elem, depth+1); err != nil {
			return in(err, string(key))
		}
		sc.space()
		if sc.i >= len(sc.b) {
			return sc.fail("truncated object")
		}
		switch sc.b[sc.i] {
		case ',':
			sc.i++
		case '}':
			sc.i++
			return nil
		default:
			return sc.fail("want , or } in an object")
		}
	}
}

// str scans a string from its opening quote and returns its raw contents and
// whether they hold escapes. Every \u escape must be a character: a high
// surrogate only with a low one right after it.
func (sc *jsScanner) str() ([]byte, bool, error) {
	sc.i++ // "
	start, escaped := sc.i, false
	for sc.i < len(sc.b) {
		c := sc.b[sc.i]
		switch {
		case c == '"':
			sc.i++
			return sc.b[start : sc.i-1], escaped, nil
		case c < 0x20:
			return nil, false, sc.fail("control character in a string")
		case c != '\\':
			sc.i++
			continue
		}
		escaped = true
		if sc.i+1 >= len(sc.b) {
			break
		}
		switch sc.b[sc.i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			sc.i += 2
		case 'u':
			r, ok := sc.hex4(sc.i + 2)
			if !ok {
				return nil, false, sc.fail("malformed \\u escape")
			}
			switch {
			case r >= 0xdc00 && r <= 0xdfff:
				return nil, false, sc.fail("\\u escape of a lone low surrogate")
			case r >= 0xd800 && r <= 0xdbff:
				lo, ok := rune(0), sc.i+11 < len(sc.b) && sc.b[sc.i+6] == '\\' && sc.b[sc.i+7] == 'u'
				if ok {
					lo, ok = sc.hex4(sc.i + 8)
				}
				if !ok || lo < 0xdc00 || lo > 0xdfff {
					return nil, false, sc.fail("\\u escape of a lone high surrogate")
				}
				sc.i += 12
			default:
				sc.i += 6
			}
		default:
			return nil, false, sc.fail("malformed escape")
		}
	}
	return nil, false, sc.fail("truncated string")
}

// hex4 reads the four hex digits at i.
func (sc *jsScanner) hex4(i int) (rune, bool) {
	if i+4 > len(sc.b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(sc.b[i:i+4]), 16, 16)
	return rune(v), err == nil
}
