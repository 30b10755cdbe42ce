package dynamo

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

// Key encoding. A key is a sequence of parts, each followed by sep. Parts are
// user strings escaped so that they never contain sep, which makes every key
// prefix-free per part: "c!a!" can never be mistaken for "c!a!b" or "c!a#21!".
//
// The escape keeps byte order, so checkpoint ids sort in the table exactly as
// they compare in Go (and in LangGraph): every byte up to and including esc is
// written as esc and two upper-case hex digits, which sort above sep and below
// every byte left as it is. sep is the smallest byte an encoded part can be
// followed by, so a shorter id sorts before every id it is a prefix of.
const (
	sep = '!' // 0x21: ends every part
	esc = '#' // 0x23: starts an escaped byte; bytes 0x00..0x23 are escaped
)

// hashed starts a part that stands for a string too long to keep in the key:
// "#Z" never starts an escaped byte (those are "#" and a hex digit), so a
// hashed part cannot equal an escaped one.
const hashed = "#Z"

// Longest escaped parts kept as they are; longer ones are hashed. Together
// they keep every sort key under DynamoDB's 1,024-byte limit whatever the
// input: checkpoint ids are never hashed (their order matters), and the
// domain bounds them escaped (saver.KeyBytes, at most saver.MaxIDKeyBytes:
// 256 "!" would be 768 bytes). TestKeyLengths checks the worst case.
const (
	maxNSPart    = 300
	maxNamePart  = 150 // channel names, versions, task ids
	maxTenantKey = 600 // partition keys may be 2,048 bytes
)

// escape returns s with every byte <= esc written as esc and two hex digits:
// saver.KeyBytes(s) bytes.
func escape(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] <= esc {
			n++
		}
	}
	if n == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2*n)
	const digits = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= esc {
			b.WriteByte(esc)
			b.WriteByte(digits[c>>4])
			b.WriteByte(digits[c&0xF])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// part returns s escaped, or hashed when the escaped form is longer than max.
// Parts made by part keep equality but not order; use escape for ids.
func part(s string, max int) string {
	e := escape(s)
	if len(e) <= max {
		return e
	}
	sum := sha256.Sum256([]byte(s))
	return hashed + hex.EncodeToString(sum[:])
}

// key joins parts, each followed by sep.
func key(parts ...string) string {
	n := 0
	for _, p := range parts {
		n += len(p) + 1
	}
	var b strings.Builder
	b.Grow(n)
	for _, p := range parts {
		b.WriteString(p)
		b.WriteByte(sep)
	}
	return b.String()
}

// Sort-key kinds: the first part of every sort key.
const (
	kindCheckpoint = "c" // checkpoints and, right after each, its writes
	kindWrite      = "w" // the part after a checkpoint's key that starts a write
	kindBlob       = "b"
)

// partitionKey is the key every item of a thread shares.
func partitionKey(tenant, threadID string) string {
	return tenantPrefix(tenant) + key(escape(threadID))
}

// tenantPrefix starts the partition key of every thread of a tenant.
func tenantPrefix(tenant string) string { return key(part(tenant, maxTenantKey)) }

// nsPrefix starts the sort key of every checkpoint and write of a namespace.
func nsPrefix(ns string) string { return key(kindCheckpoint, part(ns, maxNSPart)) }

// threadCheckpointsPrefix starts the sort key of every checkpoint and write of
// a thread, in all namespaces.
func threadCheckpointsPrefix() string { return key(kindCheckpoint) }

// checkpointKey is a checkpoint's sort key. Its writes' keys start with it.
func checkpointKey(ns, id string) string { return nsPrefix(ns) + key(escape(id)) }

// writeKey is a pending write's sort key: right after its checkpoint's, so
// that a descending Query meets a checkpoint's writes just before it.
func writeKey(ns, id, taskID string, idx int64) string {
	return checkpointKey(ns, id) + key(kindWrite, part(taskID, maxNamePart), strconv.FormatInt(idx, 10))
}

// blobKey is a channel value's sort key.
func blobKey(ns, channel, version string) string {
	return key(kindBlob, part(ns, maxNSPart), part(channel, maxNamePart), part(version, maxNamePart))
}

// beforeBound is the largest sort key a checkpoint of ns with an id smaller
// than before can have: nsPrefix + escape(before), with no sep. Every key of
// such a checkpoint (or its writes) sorts below it, and every key of before
// itself or a larger id sorts above it.
func beforeBound(ns, before string) string { return nsPrefix(ns) + escape(before) }
