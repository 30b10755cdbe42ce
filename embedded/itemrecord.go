package embedded

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/saver-dev/saver"
)

// Items (LangGraph's BaseStore) live in three buckets of their own:
//
//	items        (tenant, label_1, ..., label_n, "", key) -> item record
//	item_vectors the same key                                -> the item's vectors
//	item_expiry  expiry ++ item key                          -> empty
//
// Labels are never empty, so the empty component ends the namespace: the
// key of (tenant, labels...) without it is a byte prefix of exactly the
// items of that namespace and of the namespaces under it, so a search reads
// only its prefix; and byte order is Python's tuple order of namespaces,
// each namespace's items before those of the namespaces under it, which a
// listing returns as it walks. The expiry index holds the items that have
// a TTL, by expiry (Unix nanoseconds, encoded as a write's idx), for Sweep.
//
// An item record is binary, its fixed header first so that a search reads
// an item's expiry and update time without decoding its value:
//
//	version    1 byte (2)
//	expires_at 8 bytes, Unix nanoseconds, 0 never
//	ttl        8 bytes, nanoseconds, 0 none
//	created_at 8 bytes, Unix nanoseconds
//	updated_at 8 bytes, Unix nanoseconds
//	vectors    4 bytes, how many
//	dims       4 bytes, numbers per vector
//	value      the rest: the JSON object, as the client sent it
//
// The vectors themselves (vectors*dims float32, little-endian, end to end)
// are apart, under the item's key in item_vectors, when it has any: a
// vector of 384 dims is 1.5 KB, ten times a typical value, and only a
// search with a query reads them, walking both buckets' prefix side by
// side; gets, filtered searches and listings read the records alone.
//
// Records of version 1, written before vectors moved apart, hold their
// vectors between dims and the value. They read as they are; the next put
// of the item writes it anew as version 2.
var (
	bucketItems       = []byte("items")
	bucketItemVectors = []byte("item_vectors")
	bucketItemExpiry  = []byte("item_expiry")
)

const (
	itemRecordInline  = 1 // vectors inside the record
	itemRecordVersion = 2 // vectors apart
	itemHeaderBytes   = 1 + 8*4 + 4 + 4
)

var errBadItem = errors.New("malformed item record")

// itemRecord is an item record's header, and its value as a slice of the
// record's bytes; vectors too for a record of version 1.
type itemRecord struct {
	expiresAt, ttl, createdAt, updatedAt int64
	n, dims                              int
	inline                               bool   // version 1: the vectors are in the record
	vectors                              []byte // a version 1 record's n*dims float32, little-endian
	value                                []byte
}

// vectorsApart reports whether the item has vectors in item_vectors.
func (r itemRecord) vectorsApart() bool { return !r.inline && r.n > 0 }

// nsKey is the key prefix of a namespace and everything under it: the
// tenant and the labels.
func nsKey(tenant string, ns saver.Namespace) []byte {
	k := appendComponent(nil, tenant)
	for _, l := range ns {
		k = appendComponent(k, l)
	}
	return k
}

// itemKey is the key of an item.
func itemKey(tenant string, ns saver.Namespace, k string) []byte {
	return appendComponent(append(nsKey(tenant, ns), sep), k)
}

// parseItemKey returns the namespace and key of an item key without its
// tenant component (the rest of nextComponent).
func parseItemKey(rest []byte) (saver.Namespace, string, error) {
	var ns saver.Namespace
	for {
		l, r, err := nextComponent(rest)
		if err != nil {
			return nil, "", err
		}
		rest = r
		if l == "" {
			break
		}
		ns = append(ns, l)
	}
	k, rest, err := nextComponent(rest)
	if err == nil && len(rest) != 0 {
		err = errBadKey
	}
	return ns, k, err
}

// encodeItem returns the record of an item whose vectors are n of dims
// numbers each, kept apart (encodeVectors).
func encodeItem(r itemRecord, value []byte) []byte {
	b := make([]byte, 0, itemHeaderBytes+len(value))
	b = append(b, itemRecordVersion)
	for _, x := range []int64{r.expiresAt, r.ttl, r.createdAt, r.updatedAt} {
		b = binary.BigEndian.AppendUint64(b, uint64(x))
	}
	b = binary.BigEndian.AppendUint32(b, uint32(r.n))
	b = binary.BigEndian.AppendUint32(b, uint32(r.dims))
	return append(b, value...)
}

func decodeItem(b []byte) (itemRecord, error) {
	if len(b) < itemHeaderBytes || (b[0] != itemRecordVersion && b[0] != itemRecordInline) {
		return itemRecord{}, errBadItem
	}
	be := binary.BigEndian
	r := itemRecord{
		expiresAt: int64(be.Uint64(b[1:])),
		ttl:       int64(be.Uint64(b[9:])),
		createdAt: int64(be.Uint64(b[17:])),
		updatedAt: int64(be.Uint64(b[25:])),
		n:         int(be.Uint32(b[33:])),
		dims:      int(be.Uint32(b[37:])),
		inline:    b[0] == itemRecordInline,
	}
	if r.n > saver.MaxItemVectors || r.dims > saver.MaxVectorDims {
		return itemRecord{}, errBadItem
	}
	vb := 0
	if r.inline {
		vb = 4 * r.n * r.dims
		if len(b) < itemHeaderBytes+vb {
			return itemRecord{}, errBadItem
		}
		r.vectors = b[itemHeaderBytes : itemHeaderBytes+vb]
	}
	r.value = b[itemHeaderBytes+vb:]
	return r, nil
}

// withItemExpiry returns a copy of the record b with its expiry set.
func withItemExpiry(b []byte, expiresAt int64) []byte {
	out := append([]byte(nil), b...)
	binary.BigEndian.PutUint64(out[1:], uint64(expiresAt))
	return out
}

// expired reports whether the record has expired at now.
func (r itemRecord) expired(now time.Time) bool {
	return saver.ItemExpired(unixNanoTime(r.expiresAt), now)
}

// item returns the record as an Item, its value copied.
func (r itemRecord) item(ns saver.Namespace, k string) saver.Item {
	return saver.Item{
		Namespace: ns, Key: k, Value: append([]byte(nil), r.value...),
		CreatedAt: time.Unix(0, r.createdAt).UTC(), UpdatedAt: time.Unix(0, r.updatedAt).UTC(),
	}
}

// unixNanoTime is a Unix nanosecond time, 0 the zero time.
func unixNanoTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// unixNanos is a time as Unix nanoseconds, the zero time 0.
func unixNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// itemExpiryKey is an item's entry in the expiry index.
func itemExpiryKey(expiresAt int64, ik []byte) []byte {
	return append([]byte(idxComponent(expiresAt)), ik...)
}
