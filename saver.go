// Package saver is the domain of a LangGraph checkpoint store: checkpoints,
// channel blobs, pending writes, the Store contract every backend implements,
// and the one error taxonomy shared by all packages.
//
// Payloads are opaque (type, bytes) pairs produced by LangGraph's serializer on
// the client; nothing in this module decodes them. Metadata is structured so
// that stores can filter on it.
package saver

import (
	"cmp"
	"slices"
	"strings"
)

// Typed is a value serialised by LangGraph's serializer (serde.dumps_typed):
// a type tag such as "msgpack" or "msgpack+aes" and the bytes it produced.
type Typed struct {
	Type string `msgpack:"type" json:"type"`
	Data []byte `msgpack:"data" json:"data"`
}

// EmptyType marks a blob written for a channel that has a new version but no
// value, as LangGraph's InMemorySaver does. Readers skip it.
const EmptyType = "empty"

// Metadata is a checkpoint's metadata: JSON-like values (string, bool, int64,
// float64, nil, []any, map[string]any) kept with their types.
type Metadata map[string]any

// CheckpointRef names one checkpoint. An empty ID means "the latest checkpoint
// in (Tenant, ThreadID, NS)".
type CheckpointRef struct {
	Tenant   string
	ThreadID string
	NS       string
	ID       string
}

// Checkpoint is a stored checkpoint without its channel values: the skeleton
// bytes as the client serialised them, the structured metadata, the parent
// link and the channel versions used to resolve blobs on read.
type Checkpoint struct {
	CheckpointRef

	// ParentID is the checkpoint_id of the config passed to put; "" when none.
	ParentID string
	// Body is the serialised checkpoint minus channel_values. It carries v, ts,
	// versions_seen and every unknown key exactly as the client sent them.
	Body     Typed
	Metadata Metadata
	// ChannelVersions maps each channel to its current version, as a string.
	// Blobs are looked up by (channel, version) through this map.
	ChannelVersions map[string]string

	// Scope is the thread's retention scope when the checkpoint was put.
	Scope Scope
	// ExpiresAt is when the checkpoint expires, in epoch seconds; 0 never.
	// See Expiry for what it implies for the checkpoint's blobs and writes.
	ExpiresAt int64
}

// Blob is one channel's value at one version. Blobs are keyed by
// (tenant, thread, ns, channel, version) and shared by every checkpoint whose
// ChannelVersions point at them.
type Blob struct {
	Channel string `msgpack:"channel" json:"channel"`
	Version string `msgpack:"version" json:"version"`
	Value   Typed  `msgpack:"value" json:"value"`
}

// Write is one pending write of a task against a checkpoint.
type Write struct {
	TaskID   string `msgpack:"task_id" json:"task_id"`
	TaskPath string `msgpack:"task_path" json:"task_path"`
	// Idx is the write's position in its task's list, or a negative number
	// for LangGraph's special channels (error, scheduled, interrupt, resume).
	Idx     int64  `msgpack:"idx" json:"idx"`
	Channel string `msgpack:"channel" json:"channel"`
	Value   Typed  `msgpack:"value" json:"value"`
}

// SortWrites sorts writes into the order a Tuple holds them: by task path,
// then task id, then idx, which is the order LangGraph applies a
// checkpoint's pending writes in.
func SortWrites(ws []Write) {
	slices.SortFunc(ws, func(a, b Write) int {
		return cmp.Or(
			strings.Compare(a.TaskPath, b.TaskPath),
			strings.Compare(a.TaskID, b.TaskID),
			cmp.Compare(a.Idx, b.Idx))
	})
}

// Upserts reports whether the write replaces an existing one with the same key.
// Special channels (negative idx) are replaced; ordinary writes are inserted
// only if absent, so a replayed task never duplicates or changes its writes.
func (w Write) Upserts() bool { return w.Idx < 0 }

// PutCheckpoint is the input of Store.PutCheckpoint: a checkpoint and the
// blobs of the channels whose version changed (LangGraph's new_versions).
type PutCheckpoint struct {
	Checkpoint
	Blobs []Blob
	// ExpectHead, when set, makes the put conditional: it applies only if the
	// latest checkpoint of (tenant, thread, ns) has this id ("" = none yet).
	// Otherwise the store returns ECONFLICT (HeadMoved) and writes nothing.
	// Not every store honours it, and LangGraph itself never needs it: a
	// store says in its doc whether it does, and the binary wires the API
	// to refuse the condition for a store that does not.
	ExpectHead *string
}

// PutWrites is the input of Store.PutWrites: writes against one checkpoint.
// The checkpoint does not have to exist yet; writes may arrive before its put.
type PutWrites struct {
	CheckpointRef
	Writes []Write
	// ExpiresAt is when the writes expire, in epoch seconds; 0 never.
	ExpiresAt int64
}

// Tuple is a checkpoint with everything a reader needs to rebuild LangGraph's
// CheckpointTuple: the channel values resolved at the checkpoint's versions
// and the pending writes stored against it.
type Tuple struct {
	Checkpoint
	// Values holds one blob per channel in ChannelVersions whose blob exists
	// and is not empty, sorted by channel.
	Values []Blob
	// Writes is ordered by (task_path, task_id, idx): see SortWrites.
	Writes []Write
}
