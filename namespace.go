package saver

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Namespace is the path of labels an item is kept under, such as
// ("users", user_id, "memories"). Namespaces order as Python orders tuples:
// label by label, each by code point (UTF-8 byte order), a namespace before
// those it is a prefix of.
type Namespace []string

// Limits on namespaces and keys, as an ordered store key holds them (see
// KeyBytes). A DynamoDB sort key holds the namespace's labels and the item's
// key, each escaped and followed by a separator, within its 1,024 bytes:
// MaxNamespaceKeyBytes + MaxItemKeyBytes leaves room for the key's prefix.
const (
	MaxLabelKeyBytes     = 256
	MaxNamespaceKeyBytes = 512 // the labels' KeyBytes, plus one separator each
	MaxItemKeyBytes      = 384
)

// Validate checks a namespace that names where an item is: at least one
// label, each valid (see validLabels). field names it in errors.
func (ns Namespace) Validate(field string) error {
	if len(ns) == 0 {
		return Errorf(EINVALID, "%s is empty; give at least one label.", field)
	}
	return ns.validLabels(field)
}

// validLabels checks each label: not empty, no '.' (LangGraph joins labels
// with dots), no NUL, UTF-8, and the whole within the key layout's limits.
func (ns Namespace) validLabels(field string) error {
	n := 0
	for i, l := range ns {
		f := field + "[" + strconv.Itoa(i) + "]"
		switch {
		case l == "":
			return Errorf(EINVALID, "%s is an empty label; labels must not be empty.", f)
		case strings.Contains(l, "."):
			return Errorf(EINVALID, "%s (%.64q) contains a '.'; labels must not.", f, l)
		case strings.Contains(l, "\x00"):
			return Errorf(EINVALID, "%s contains a NUL byte; labels must not.", f)
		case !utf8.ValidString(l):
			return Errorf(EINVALID, "%s is not valid UTF-8.", f)
		case KeyBytes(l) > MaxLabelKeyBytes:
			return Errorf(EINVALID, "%s takes %d bytes in a store key (each control character, space, !, \" or # takes three); the limit is %d.", f, KeyBytes(l), MaxLabelKeyBytes)
		}
		n += KeyBytes(l) + 1
	}
	if n > MaxNamespaceKeyBytes {
		return Errorf(EINVALID, "%s takes %d bytes in a store key; the limit is %d.", field, n, MaxNamespaceKeyBytes)
	}
	return nil
}

// ValidateItemKey checks an item's key: UTF-8 and within the key layout's
// limit. An empty key is a key, as in LangGraph.
func ValidateItemKey(k string) error {
	switch {
	case !utf8.ValidString(k):
		return Errorf(EINVALID, "key is not valid UTF-8.")
	case KeyBytes(k) > MaxItemKeyBytes:
		return Errorf(EINVALID, "key takes %d bytes in a store key (each control character, space, !, \" or # takes three); the limit is %d.", KeyBytes(k), MaxItemKeyBytes)
	}
	return nil
}

// HasPrefix reports whether ns starts with every label of prefix.
func (ns Namespace) HasPrefix(prefix Namespace) bool {
	if len(ns) < len(prefix) {
		return false
	}
	for i, l := range prefix {
		if ns[i] != l {
			return false
		}
	}
	return true
}

// Compare orders namespaces as Python orders tuples of strings.
func (ns Namespace) Compare(other Namespace) int {
	for i := 0; i < len(ns) && i < len(other); i++ {
		if c := strings.Compare(ns[i], other[i]); c != 0 {
			return c
		}
	}
	return len(ns) - len(other)
}

// Truncate returns ns cut to depth labels (depth 0: whole).
func (ns Namespace) Truncate(depth int) Namespace {
	if depth > 0 && len(ns) > depth {
		return ns[:depth]
	}
	return ns
}

// Match types of a MatchCondition.
const (
	MatchPrefix = "prefix"
	MatchSuffix = "suffix"
)

// MatchCondition selects namespaces by their first (prefix) or last
// (suffix) labels; a "*" label matches any label.
type MatchCondition struct {
	MatchType string
	Path      []string
}

// Validate checks the type and the labels, where "*" is allowed.
func (c MatchCondition) Validate(field string) error {
	if c.MatchType != MatchPrefix && c.MatchType != MatchSuffix {
		return Errorf(EINVALID, "%s.match_type is %.40q; use %q or %q.", field, c.MatchType, MatchPrefix, MatchSuffix)
	}
	return Namespace(c.Path).validLabels(field + ".path")
}

// Matches reports whether ns meets the condition, as InMemoryStore's
// _does_match: a namespace shorter than the path never does.
func (c MatchCondition) Matches(ns Namespace) bool {
	if len(ns) < len(c.Path) {
		return false
	}
	off := 0
	if c.MatchType == MatchSuffix {
		off = len(ns) - len(c.Path)
	}
	for i, p := range c.Path {
		if p != "*" && ns[off+i] != p {
			return false
		}
	}
	return true
}

// FixedPrefix is the labels a listing's conditions fix at the start of every
// namespace they match (a prefix condition's labels before its first "*"),
// so that a store reads only under them.
func (op ListNamespacesOp) FixedPrefix() Namespace {
	var best Namespace
	for _, c := range op.Conditions {
		if c.MatchType != MatchPrefix {
			continue
		}
		n := 0
		for n < len(c.Path) && c.Path[n] != "*" {
			n++
		}
		if n > len(best) {
			best = c.Path[:n]
		}
	}
	return best
}

// Matches reports whether ns meets every condition of the listing.
func (op ListNamespacesOp) Matches(ns Namespace) bool {
	for _, c := range op.Conditions {
		if !c.Matches(ns) {
			return false
		}
	}
	return true
}
