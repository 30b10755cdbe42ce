package dynamo

import (
	"context"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/internal/awsx"
)

// A put_writes stores its ordinary writes (idx >= 0) as one bundle item,
// whatever their number: one PutItem, a single item's write units (a
// transaction of one item per write costs twice the units of every item),
// and all or nothing at any size. Writes stored one item each would need a
// transaction, and past one (over 100 writes, or over 4 MB of items) two:
// if the second failed, the first one's writes would stay visible, and
// LangGraph takes a task with pending writes for done, so the rest would
// be lost on resume. A bundle too large to keep inline is offloaded like
// any payload (object first, then the item).
//
// The bundle is a write item (kind "write", so deletes, copies, prunes and
// expiry treat it as one) whose value is bundleType with the writes
// msgpacked as bundled entries, keyed under its first write's task with a
// sequence number (bundleKey). Special writes (negative idx) never go in a
// bundle: they stay items of their own, which the tree reads without
// payloads, in the same transaction. Write items of one write, which older
// versions stored, and their bundles at "b<idx>" keep reading.
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

// bundleKey is the sort key of the seq-th bundle of a task's writes:
// among the writes of its checkpoint, under the task, with a part no idx
// can equal (an idx is a decimal number). Bundles older versions stored,
// at "b<idx>" of their first write, sort before every one of these.
func bundleKey(ref saver.CheckpointRef, taskID string, seq int) string {
	return checkpointKey(ref.NS, ref.ID) + key(kindWrite, part(taskID, maxNamePart), fmt.Sprintf("s%06d", seq))
}

// maxBundles bounds the bundles of a task's writes against one checkpoint:
// each holds writes of idxs the ones before it lack, so replays that keep
// adding writes are the only way to more than one.
const maxBundles = 1000

// bundle returns the insert of the seq-th bundle of ordinary writes (idx >=
// 0) under the first one's task, offloaded when large, if absent or expired
// like a single write.
func (s *Store) bundle(ctx context.Context, ref saver.CheckpointRef, writes []saver.Write, seq int, exp int64) (awsx.WriteOp, error) {
	entries := make([]bundled, len(writes))
	for i, w := range writes {
		entries[i] = bundled{TaskID: w.TaskID, TaskPath: w.TaskPath, Idx: w.Idx, Channel: w.Channel, Type: w.Value.Type, Data: w.Value.Data}
	}
	data, err := msgpack.Marshal(entries)
	if err != nil {
		return awsx.WriteOp{}, fmt.Errorf("encode bundle: %w", err)
	}
	first := writes[0]
	value := saver.Typed{Type: bundleType, Data: data}
	it := threadItem(ref, bundleKey(ref, first.TaskID, seq), itemWrite, exp)
	it[attrID] = attrS(ref.ID)
	it[attrTaskID] = attrS(first.TaskID)
	it[attrTaskPath] = attrS(first.TaskPath)
	it[attrBundle] = attrN(int64(len(entries)))
	it[attrValue] = payloadAttr(value)
	if err := s.offload(ctx, ref.Tenant, ref.ThreadID, it, attrValue, value, exp); err != nil {
		return awsx.WriteOp{}, fmt.Errorf("bundle of %d writes: %w", len(entries), err)
	}
	return awsx.WriteOp{Item: it, Cond: absentOrExpired(s.Now())}, nil
}

// writeID is a write's identity: a task's writes of one idx are the same
// write, stored once.
type writeID struct {
	task string
	idx  int64
}

// bundleTaken reports that a bundle's key holds a bundle already, with the
// writes it has.
type bundleTaken struct {
	sk  string
	has map[writeID]bool
}

func (e *bundleTaken) Error() string { return fmt.Sprintf("dynamo: bundle %s is stored already", e.sk) }

// bundledIDs returns the writes of a bundle item as stored, its payload
// fetched if offloaded.
func (s *Store) bundledIDs(ctx context.Context, it item) (map[writeID]bool, error) {
	var (
		l loads
		v saver.Typed
	)
	if err := l.payload(it[attrValue], &v); err != nil {
		return nil, err
	}
	if err := s.fetch(ctx, &l); err != nil {
		return nil, err
	}
	ws, err := unbundle(v)
	if err != nil {
		return nil, err
	}
	has := make(map[writeID]bool, len(ws))
	for _, w := range ws {
		has[writeID{w.TaskID, w.Idx}] = true
	}
	return has, nil
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
