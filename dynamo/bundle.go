package dynamo

import (
	"context"
	"fmt"
	"strconv"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/saver-dev/saver"
)

// A put_writes that does not fit one transaction (over 100 writes, or over
// 4 MB of items) is stored as one bundle item rather than several
// transactions: if the second of two transactions failed, the first one's
// writes would stay visible, and LangGraph takes a task with pending writes
// for done, so the rest would be lost on resume. One item is written or not;
// a bundle too large to keep inline is offloaded like any payload (object
// first, then the item), so a bundle is all or nothing whatever its size.
//
// The bundle is a write item (kind "write", so deletes, copies, prunes and
// expiry treat it as one) whose value is bundleType with the writes
// msgpacked as bundled entries, keyed under its first write's task and idx.
// Special writes (negative idx) never go in a bundle: they stay items of
// their own, which the tree reads without payloads, in the same transaction.
const (
	bundleType = "saver/writes"
	attrBundle = "bundle" // number of writes in a bundle item
)

// bundleValue is a bundle item's value as read, with its sort key.
type bundleValue struct {
	sk    string
	value *saver.Typed
}

// bundled is one write of a bundle.
type bundled struct {
	_msgpack struct{} `msgpack:",as_array"`
	TaskID   string
	TaskPath string
	Idx      int64
	Channel  string
	Type     string
	Data     []byte
}

// bundleKey is a bundle's sort key: among the writes of its checkpoint, under
// the first write's task, with a part no idx can equal (an idx is a decimal
// number).
func bundleKey(ref saver.CheckpointRef, first saver.Write) string {
	return checkpointKey(ref.NS, ref.ID) + key(kindWrite, part(first.TaskID, maxNamePart), "b"+strconv.FormatInt(first.Idx, 10))
}

// bundle returns the insert of a bundle of in's ordinary writes, offloaded
// when large, and in's special writes (negative idx), which stay items of
// their own: they replace a stored write where ordinary ones keep the first,
// and the bundle, inserted only if absent or expired like a single write,
// keeps a replayed put's first writes. PutWrites sends them in one
// transaction.
func (s *Store) bundle(ctx context.Context, in saver.PutWrites) (writeOp, []saver.Write, error) {
	var (
		entries  []bundled
		specials []saver.Write
		first    saver.Write
	)
	for _, w := range in.Writes {
		if w.Upserts() {
			specials = append(specials, w)
			continue
		}
		if entries == nil {
			first = w
		}
		entries = append(entries, bundled{TaskID: w.TaskID, TaskPath: w.TaskPath, Idx: w.Idx, Channel: w.Channel, Type: w.Value.Type, Data: w.Value.Data})
	}
	if len(entries) == 0 {
		return writeOp{}, nil, saver.Errorf(saver.ETOOLARGE, "A put_writes may hold at most %d writes to special channels (negative idx); this one has %d.",
			maxTransactItems-1, len(specials))
	}
	data, err := msgpack.Marshal(entries)
	if err != nil {
		return writeOp{}, nil, fmt.Errorf("encode bundle: %w", err)
	}
	value := saver.Typed{Type: bundleType, Data: data}
	it := item{
		attrPK:       attrS(partitionKey(in.Tenant, in.ThreadID)),
		attrSK:       attrS(bundleKey(in.CheckpointRef, first)),
		attrKind:     attrS(itemWrite),
		attrThread:   attrS(in.ThreadID),
		attrNS:       attrS(in.NS),
		attrID:       attrS(in.ID),
		attrTaskID:   attrS(first.TaskID),
		attrTaskPath: attrS(first.TaskPath),
		attrBundle:   attrN(int64(len(entries))),
		attrValue:    payloadAttr(value),
	}
	if in.ExpiresAt != 0 {
		it[attrExpiresAt] = attrN(in.ExpiresAt)
	}
	if err := s.offload(ctx, in.Tenant, in.ThreadID, it, attrValue, value, in.ExpiresAt); err != nil {
		return writeOp{}, nil, fmt.Errorf("bundle of %d writes: %w", len(entries), err)
	}
	return writeOp{item: it, cond: absentOrExpired(s.Now())}, specials, nil
}

// isBundle reports whether a write item is a bundle.
func isBundle(it item) bool {
	_, ok := it[attrBundle]
	return ok
}

// unbundle decodes a bundle's value, fetched already, into writes.
func unbundle(v saver.Typed) ([]saver.Write, error) {
	if v.Type != bundleType {
		return nil, fmt.Errorf("bundle value is of type %q, not %q", v.Type, bundleType)
	}
	var entries []bundled
	if err := msgpack.Unmarshal(v.Data, &entries); err != nil {
		return nil, fmt.Errorf("decode bundle: %w", err)
	}
	out := make([]saver.Write, len(entries))
	for i, e := range entries {
		data := e.Data
		if data == nil {
			data = []byte{}
		}
		out[i] = saver.Write{TaskID: e.TaskID, TaskPath: e.TaskPath, Idx: e.Idx, Channel: e.Channel, Value: saver.Typed{Type: e.Type, Data: data}}
	}
	return out, nil
}
