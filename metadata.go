package saver

import (
	"encoding/json"
	"fmt"
	"math"
)

// Contains reports whether md has every key of filter with an equal value.
// It follows InMemorySaver's metadata.get(k) == v: numbers compare by value
// whatever their type (1 == 1.0), lists and maps element by element, and a
// nil (None) value matches a missing key. Booleans are kept apart from
// numbers, unlike Python, so that {"ok": true} never matches {"ok": 1}.
func (md Metadata) Contains(filter Metadata) bool {
	for k, want := range filter {
		if !Equal(md[k], want) {
			return false
		}
	}
	return true
}

// Equal compares two normalised metadata values (see NormalizeValue).
func Equal(a, b any) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case bool:
		b, ok := b.(bool)
		return ok && a == b
	case string:
		b, ok := b.(string)
		return ok && a == b
	case int64, float64:
		return equalNumbers(a, b)
	case []any:
		b, ok := b.([]any)
		return ok && equalLists(a, b)
	case map[string]any:
		b, ok := b.(map[string]any)
		return ok && equalMaps(a, b)
	}
	return false
}

// equalNumbers compares by value whatever the types: 1 == 1.0.
func equalNumbers(a, b any) bool {
	x, ok := asFloat(a)
	if !ok {
		return false
	}
	y, ok := asFloat(b)
	if !ok {
		return false
	}
	if i, ok := a.(int64); ok {
		if j, ok := b.(int64); ok {
			return i == j // exactly, even where float64 would round
		}
	}
	return x == y
}

func asFloat(v any) (float64, bool) {
	switch v := v.(type) {
	case int64:
		return float64(v), true
	case float64:
		return v, true
	}
	return 0, false
}

func equalLists(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func equalMaps(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || !Equal(v, w) {
			return false
		}
	}
	return true
}

// NormalizeMetadata converts every value of md in place with NormalizeValue,
// the maps and lists inside it too: a decoded tree is not copied again (a
// copy once doubled what four million empty maps took). Values already in
// normal form are left as they are, never written.
func NormalizeMetadata(md Metadata) error {
	for k, v := range md {
		n, replaced, err := normalize(v, 0)
		if err != nil {
			return Errorf(EINVALID, "Metadata key %q: %s", k, ErrorMessage(err))
		}
		if replaced {
			md[k] = n
		}
	}
	return nil
}

// maxDepth bounds nesting in metadata so that a hostile body cannot make
// normalisation or comparison recurse without end.
const maxDepth = 32

// NormalizeValue converts a decoded JSON or msgpack value to the types
// Metadata holds: nil, bool, string, int64, float64, []any and map[string]any.
// Integers that do not fit int64 become float64, as JSON would have them.
// Maps and lists are converted in place.
func NormalizeValue(v any) (any, error) {
	n, _, err := normalize(v, 0)
	return n, err
}

// normalize returns v in normal form, and whether that is another value
// than v, which the container holding v must store.
func normalize(v any, depth int) (any, bool, error) {
	if depth > maxDepth {
		return nil, false, Errorf(EINVALID, "Value nested deeper than %d levels.", maxDepth)
	}
	switch v := v.(type) {
	case nil, bool, string, int64:
		return v, false, nil
	case []any:
		for i, e := range v {
			n, replaced, err := normalize(e, depth+1)
			if err != nil {
				return nil, false, err
			}
			if replaced {
				v[i] = n
			}
		}
		return v, false, nil
	case map[string]any:
		for k, e := range v {
			n, replaced, err := normalize(e, depth+1)
			if err != nil {
				return nil, false, err
			}
			if replaced {
				v[k] = n
			}
		}
		return v, false, nil
	case Metadata:
		n, _, err := normalize(map[string]any(v), depth)
		return n, true, err
	case map[any]any:
		n, err := normalizeAnyMap(v, depth)
		return n, true, err
	}
	n, err := normalizeNumber(v)
	if _, ok := v.(float64); ok {
		return n, false, err // finite, as it was, or refused
	}
	return n, err == nil, err
}

// normalizeAnyMap converts a map msgpack decoded with keys of any type,
// which must all be strings.
func normalizeAnyMap(v map[any]any, depth int) (any, error) {
	out := make(map[string]any, len(v))
	for k, e := range v {
		ks, ok := k.(string)
		if !ok {
			return nil, Errorf(EINVALID, "Map key %v is not a string.", k)
		}
		n, _, err := normalize(e, depth+1)
		if err != nil {
			return nil, err
		}
		out[ks] = n
	}
	return out, nil
}

// normalizeNumber converts the numeric types decoders produce to int64 or
// a finite float64, and refuses any other type.
func normalizeNumber(v any) (any, error) {
	switch v := v.(type) {
	case int64:
		return v, nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, Errorf(EINVALID, "Value %v is not a finite number.", v)
		}
		return v, nil
	case float32:
		return normalizeNumber(float64(v))
	case int:
		return int64(v), nil
	case int8:
		return int64(v), nil
	case int16:
		return int64(v), nil
	case int32:
		return int64(v), nil
	case uint8:
		return int64(v), nil
	case uint16:
		return int64(v), nil
	case uint32:
		return int64(v), nil
	case uint:
		return normalizeUint(uint64(v)), nil
	case uint64:
		return normalizeUint(v), nil
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i, nil
		}
		f, err := v.Float64()
		if err != nil {
			return nil, Errorf(EINVALID, "Value %s is not a number.", v)
		}
		return normalizeNumber(f)
	}
	return nil, Errorf(EINVALID, "Value of type %s is not allowed in metadata.", fmt.Sprintf("%T", v))
}

func normalizeUint(v uint64) any {
	if v <= math.MaxInt64 {
		return int64(v)
	}
	return float64(v)
}
