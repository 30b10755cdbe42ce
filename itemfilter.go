package saver

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ItemFilter is a search's filter: a JSON object whose every entry must hold
// for an item's value, compared exactly as LangGraph's InMemoryStore does
// (_compare_values and _apply_operator), with Python's equality:
//
//   - {"k": v} compares the value's field k (null when absent) with v: an
//     object v matches an object field that has each of v's entries (nested
//     the same way), an array v an array of the same length whose elements
//     match in turn, and any other v an equal field.
//   - An object whose keys start with "$" is a set of operators on the
//     field: $eq and $ne compare whole values for equality; $gt, $gte, $lt
//     and $lte compare them as numbers, as Python's float() converts them.
//   - Equality is Python's ==: numbers by value (1 == 1.0), true == 1 and
//     false == 0, objects and arrays deeply, null only to null.
//
// Where InMemoryStore raises, the service differs: a numeric operator on a
// field float() cannot convert (absent, null, an array, an object or a
// string that is not a number) does not match, rather than failing the
// batch; a bad operator or operand is a 400 before anything is read.
type ItemFilter struct {
	fields map[string]any // parsed JSON, numbers as json.Number
	// needles are strings the filter compares for equality, quoted as
	// JSON writes them: a value written without escapes holds each one
	// literally if it matches, so Match rejects one that lacks any without
	// decoding it (a search reads every value under its prefix).
	needles [][]byte
}

// Filter operators.
var filterOps = map[string]bool{"$eq": true, "$ne": true, "$gt": true, "$gte": true, "$lt": true, "$lte": true}

// ParseItemFilter parses a filter and checks its shape: a JSON object,
// operator objects with known operators only, numeric operators with an
// operand float() converts. Errors name the offending entry.
func ParseItemFilter(b []byte) (*ItemFilter, error) {
	v, err := decodeJSON(b)
	if err != nil {
		return nil, Errorf(EINVALID, "filter is not valid JSON: %v.", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, Errorf(EINVALID, "filter must be a JSON object, not %s.", jsonKind(v))
	}
	for k, fv := range m {
		if err := checkFilterValue("filter."+k, fv); err != nil {
			return nil, err
		}
	}
	f := &ItemFilter{fields: m}
	for _, fv := range m {
		f.needles = equalStrings(f.needles, fv)
	}
	return f, nil
}

// equalStrings appends to out the strings that filter value v compares for
// equality (a string, an $eq operand, within objects and arrays compared
// entry by entry), quoted, but for those a value could only hold escaped
// or that invalid UTF-8 in a value could decode to. A string equals only a
// string (Python's ==), so a matching value holds each.
func equalStrings(out [][]byte, v any) [][]byte {
	switch v := v.(type) {
	case string:
		if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == '"' || r == '\\' || r == utf8.RuneError }) {
			return out
		}
		return append(out, []byte(`"`+v+`"`))
	case map[string]any:
		if hasOperator(v) {
			if s, ok := v["$eq"].(string); ok {
				return equalStrings(out, s)
			}
			return out
		}
		for _, fv := range v {
			out = equalStrings(out, fv)
		}
	case []any:
		for _, e := range v {
			out = equalStrings(out, e)
		}
	}
	return out
}

func checkFilterValue(field string, v any) error {
	switch v := v.(type) {
	case map[string]any:
		if !hasOperator(v) {
			for k, fv := range v {
				if err := checkFilterValue(field+"."+k, fv); err != nil {
					return err
				}
			}
			return nil
		}
		for op, operand := range v {
			if !filterOps[op] {
				return Errorf(EINVALID, "%s: %.40q is not an operator; an object with a $ key holds only $eq, $ne, $gt, $gte, $lt and $lte.", field, op)
			}
			if op == "$eq" || op == "$ne" {
				continue
			}
			if _, ok := pyFloat(operand); !ok {
				return Errorf(EINVALID, "%s.%s takes a number, not %s.", field, op, jsonKind(operand))
			}
		}
	case []any:
		for i, e := range v {
			if err := checkFilterValue(field+"["+strconv.Itoa(i)+"]", e); err != nil {
				return err
			}
		}
	}
	return nil
}

func hasOperator(m map[string]any) bool {
	for k := range m {
		if strings.HasPrefix(k, "$") {
			return true
		}
	}
	return false
}

// Match reports whether the JSON object value passes the filter. A value
// that is not a JSON object matches no filter with entries.
func (f *ItemFilter) Match(value []byte) (bool, error) {
	if f == nil || len(f.fields) == 0 {
		return true, nil
	}
	if len(f.needles) > 0 && bytes.IndexByte(value, '\\') < 0 {
		for _, n := range f.needles {
			if !bytes.Contains(value, n) {
				return false, nil
			}
		}
	}
	v, err := decodeJSON(value)
	if err != nil {
		return false, err
	}
	m, _ := v.(map[string]any)
	for k, fv := range f.fields {
		if !compareValues(m[k], fv) {
			return false, nil
		}
	}
	return true, nil
}

// compareValues is InMemoryStore's _compare_values.
func compareValues(item, filter any) bool {
	switch f := filter.(type) {
	case map[string]any:
		if hasOperator(f) {
			for op, operand := range f {
				if !applyOperator(item, op, operand) {
					return false
				}
			}
			return true
		}
		m, ok := item.(map[string]any)
		if !ok {
			return false
		}
		for k, fv := range f {
			if !compareValues(m[k], fv) {
				return false
			}
		}
		return true
	case []any:
		l, ok := item.([]any)
		if !ok || len(l) != len(f) {
			return false
		}
		for i := range f {
			if !compareValues(l[i], f[i]) {
				return false
			}
		}
		return true
	}
	return pyEqual(item, filter)
}

// applyOperator is InMemoryStore's _apply_operator; operators were checked
// by ParseItemFilter.
func applyOperator(v any, op string, operand any) bool {
	switch op {
	case "$eq":
		return pyEqual(v, operand)
	case "$ne":
		return !pyEqual(v, operand)
	}
	x, ok := pyFloat(v)
	if !ok {
		return false // InMemoryStore raises here
	}
	y, _ := pyFloat(operand)
	switch op {
	case "$gt":
		return x > y
	case "$gte":
		return x >= y
	case "$lt":
		return x < y
	case "$lte":
		return x <= y
	}
	return false
}

// pyFloat converts v as Python's float() does a JSON value: numbers, booleans
// (1 and 0) and strings holding a number; anything else does not convert.
func pyFloat(v any) (float64, bool) {
	switch v := v.(type) {
	case json.Number:
		return parseFloat(string(v))
	case bool:
		if v {
			return 1, true
		}
		return 0, true
	case string:
		return parseFloat(strings.TrimSpace(v))
	}
	return 0, false
}

// parseFloat parses s as a float64; numbers beyond its range become
// infinities or zero, as in Python.
func parseFloat(s string) (float64, bool) {
	if s == "" || strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, true
}

// pyEqual is Python's == between two decoded JSON values.
func pyEqual(a, b any) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case string:
		s, ok := b.(string)
		return ok && a == s
	case bool, json.Number:
		return numEqual(a, b)
	case []any:
		l, ok := b.([]any)
		if !ok || len(l) != len(a) {
			return false
		}
		for i := range a {
			if !pyEqual(a[i], l[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		m, ok := b.(map[string]any)
		if !ok || len(m) != len(a) {
			return false
		}
		for k, v := range a {
			w, ok := m[k]
			if !ok || !pyEqual(v, w) {
				return false
			}
		}
		return true
	}
	return false
}

// numEqual compares numbers and booleans by value, as Python does: ints
// exactly, an int and a float exactly (2**53 + 1 != 2.0**53), floats as
// doubles; a boolean is the int 1 or 0.
func numEqual(a, b any) bool {
	x, xint, ok := pyNumber(a)
	if !ok {
		return false
	}
	y, yint, ok := pyNumber(b)
	if !ok {
		return false
	}
	switch {
	case xint != nil && yint != nil:
		return xint.Cmp(yint) == 0
	case xint == nil && yint == nil:
		return x == y
	case xint != nil:
		return intEqualsFloat(xint, y)
	}
	return intEqualsFloat(yint, x)
}

// pyNumber returns a number as Python's json module decodes it: an int for
// a literal without fraction or exponent, a float otherwise.
func pyNumber(v any) (float64, *big.Int, bool) {
	switch v := v.(type) {
	case bool:
		if v {
			return 0, big.NewInt(1), true
		}
		return 0, big.NewInt(0), true
	case json.Number:
		s := string(v)
		if !strings.ContainsAny(s, ".eE") {
			if i, ok := new(big.Int).SetString(s, 10); ok {
				return 0, i, true
			}
		}
		f, ok := parseFloat(s)
		return f, nil, ok
	}
	return 0, nil, false
}

func intEqualsFloat(i *big.Int, f float64) bool {
	if math.IsInf(f, 0) || math.IsNaN(f) || f != math.Trunc(f) {
		return false
	}
	bf, _ := new(big.Float).SetFloat64(f).Int(nil)
	return bf.Cmp(i) == 0
}

// decodeJSON decodes one JSON value, numbers as json.Number.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, Errorf(EINVALID, "trailing data after the JSON value")
	}
	return v, nil
}

// validObject checks that b is one JSON object.
func validObject(field string, b []byte) error {
	if !json.Valid(b) {
		return Errorf(EINVALID, "%s is not valid JSON.", field)
	}
	if b = bytes.TrimLeft(b, " \t\r\n"); len(b) == 0 || b[0] != '{' {
		return Errorf(EINVALID, "%s must be a JSON object.", field)
	}
	return nil
}

// jsonKind names the JSON type of a decoded value, for messages.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}
