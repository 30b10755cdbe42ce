package dynamo

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/saver-dev/saver"
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

// Keys of the Store's items (itemstore.go). A tenant's items are spread over
// itemShards partitions of their own, by a hash of their namespace's first
// two labels, and sorted in each by namespace then key:
//
//	PK  <tenant>!~items!<shard>!
//	SK  i!<label 1>!...!<label n>!!<key>!
//
// Labels and keys are escaped, never hashed (the domain bounds them, see
// saver.MaxNamespaceKeyBytes), so a namespace prefix is a prefix of the sort
// key: labels are never empty, and the empty part after the last one ends
// the namespace, so "i!a!" starts exactly the items of ("a", ...) and
// byte order is Python's tuple order.
const (
	itemsPart   = "~items"
	kindItem    = "i"
	itemShards  = 16
	shardLabels = 2 // the labels that choose an item's shard
)

// itemShard is the shard of a namespace's items, and of every namespace
// under it when it has shardLabels labels or more.
func itemShard(ns saver.Namespace) int {
	h := sha256.New()
	for _, l := range ns[:min(len(ns), shardLabels)] {
		h.Write([]byte(escape(l)))
		h.Write([]byte{sep})
	}
	return int(h.Sum(nil)[0]) % itemShards
}

// itemShardsUnder lists the shards holding the namespaces under prefix:
// its own when it fixes the labels that choose one, all of them otherwise.
func itemShardsUnder(prefix saver.Namespace) []int {
	if len(prefix) >= shardLabels {
		return []int{itemShard(prefix)}
	}
	all := make([]int, itemShards)
	for i := range all {
		all[i] = i
	}
	return all
}

// itemPartition is the partition key of a tenant's item shard.
func itemPartition(tenant string, shard int) string {
	return tenantPrefix(tenant) + key(itemsPart, strconv.Itoa(shard))
}

// itemNSPrefix starts the sort key of every item of ns and of the
// namespaces under it.
func itemNSPrefix(ns saver.Namespace) string {
	parts := make([]string, 0, len(ns)+1)
	parts = append(parts, kindItem)
	for _, l := range ns {
		parts = append(parts, escape(l))
	}
	return key(parts...)
}

// itemSortKey is the sort key of an item.
func itemSortKey(ns saver.Namespace, k string) string {
	return itemNSPrefix(ns) + key("", escape(k))
}

// itemOwnerPrefix starts the name under which a shard's offloaded values
// are kept (the Offloader's thread id): not UTF-8, so no thread's id, and
// OffloadRefs knows it for the shard's partition (see itemstore.go).
const itemOwnerPrefix = "\xff" + itemsPart + "!"

// itemOwner is the offloader's thread id of a shard's values.
func itemOwner(shard int) string { return itemOwnerPrefix + strconv.Itoa(shard) }

// parseItemOwner returns the shard an offloader's thread id names, if any.
func parseItemOwner(threadID string) (int, bool) {
	rest, ok := strings.CutPrefix(threadID, itemOwnerPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n >= 0 && n < itemShards && strconv.Itoa(n) == rest
}
