package saver

import "context"

// Store is the behavioural contract of a checkpoint store: every operation of
// LangGraph's BaseCheckpointSaver, scoped by tenant. Inputs reaching a Store
// have been validated (see the Validate methods); stores may rely on it.
//
// An acknowledged call is durable and visible to the next read. Errors carry a
// code from error.go; backends translate their own errors at the boundary.
type Store interface {
	// PutCheckpoint stores a checkpoint, upserting on (tenant, thread, ns, id),
	// and inserts each blob if no blob with its key exists yet.
	PutCheckpoint(ctx context.Context, in PutCheckpoint) error

	// PutWrites stores pending writes against a checkpoint. Writes with a
	// negative idx replace an existing write with the same (task_id, idx);
	// others are inserted only if absent.
	PutWrites(ctx context.Context, in PutWrites) error

	// GetTuple returns the checkpoint named by ref, or the latest (largest id)
	// in (tenant, thread, ns) when ref.ID is empty.
	// Returns ENOTFOUND if there is none.
	GetTuple(ctx context.Context, ref CheckpointRef) (*Tuple, error)

	// DeltaHistory returns the history of each channel of in at the
	// checkpoint it names, as LangGraph's get_delta_channel_history does
	// (see DeltaWalk): the writes stored against its ancestors on its
	// parent chain, back to the nearest one holding a value of the channel,
	// which is the seed. Expired checkpoints end the chain; expired writes
	// and values are absent. An unknown target has empty histories.
	DeltaHistory(ctx context.Context, in DeltaRequest) (map[string]*DeltaHistory, error)

	// ListCheckpoints returns the checkpoints matching f, newest first: ordered
	// by checkpoint id descending, then thread id and namespace ascending.
	ListCheckpoints(ctx context.Context, f ListFilter) ([]*Tuple, error)

	// DeleteThread removes every checkpoint, blob and write of a thread in all
	// namespaces. Deleting a missing thread is not an error.
	DeleteThread(ctx context.Context, tenant, threadID string) error

	// DeleteForRuns removes the checkpoints whose metadata run_id is one of
	// runIDs, in every thread and namespace of the tenant, with their writes.
	// Returns ECONFLICT, naming the thread and deleting nothing, when a
	// checkpoint that stays needs one of them to rebuild a DeltaChannel (it
	// is in that checkpoint's Chain).
	DeleteForRuns(ctx context.Context, tenant string, runIDs []string) error

	// CopyThread copies every checkpoint, blob and write of src to dst, ids
	// and parent links unchanged, so every copied checkpoint has its whole
	// chain. Returns ENOTFOUND if src has no checkpoint; dst is then left
	// untouched.
	CopyThread(ctx context.Context, tenant, src, dst string) error

	// Prune removes the threads' data (PruneDelete) or everything but the
	// newest checkpoint of each namespace and its writes (PruneKeepLatest).
	// PruneKeepLatest also keeps, with their writes, the ancestors in the
	// newest checkpoint's Chain, so its DeltaChannels read back unchanged.
	// Blobs still referenced by a kept checkpoint are kept.
	Prune(ctx context.Context, tenant string, threadIDs []string, strategy PruneStrategy) error
}

// ListFilter selects checkpoints for Store.ListCheckpoints.
type ListFilter struct {
	Tenant string
	// ThreadID restricts to one thread; "" means every thread of the tenant.
	ThreadID string
	// NS restricts to one namespace; nil means every namespace.
	NS *string
	// CheckpointID restricts to one checkpoint id; "" means any.
	CheckpointID string
	// Before keeps checkpoints whose id is smaller (string order); "" means no bound.
	Before string
	// Metadata keeps checkpoints whose metadata has each key with an equal value.
	Metadata Metadata
	// After resumes a listing after this position (exclusive), for paging.
	After *ListPosition
	// Limit caps the number of results; 0 means no cap.
	Limit int
}

// ListPosition is a checkpoint's place in the listing order, used as a cursor.
type ListPosition struct {
	ID       string `msgpack:"id" json:"id"`
	ThreadID string `msgpack:"thread_id" json:"thread_id"`
	NS       string `msgpack:"ns" json:"ns"`
}

// Position returns the tuple's place in the listing order.
func (t *Tuple) Position() ListPosition {
	return ListPosition{ID: t.ID, ThreadID: t.ThreadID, NS: t.NS}
}

// Follows reports whether a checkpoint at p comes strictly after cur in the
// listing order (id descending, then thread and namespace ascending).
func (p ListPosition) Follows(cur ListPosition) bool {
	if p.ID != cur.ID {
		return p.ID < cur.ID
	}
	if p.ThreadID != cur.ThreadID {
		return p.ThreadID > cur.ThreadID
	}
	return p.NS > cur.NS
}

// Matches reports whether a checkpoint passes every condition of f except
// Limit and the thread/tenant scope, which stores apply by key.
func (f ListFilter) Matches(cp *Checkpoint) bool {
	if f.NS != nil && cp.NS != *f.NS {
		return false
	}
	if f.CheckpointID != "" && cp.ID != f.CheckpointID {
		return false
	}
	if f.Before != "" && cp.ID >= f.Before {
		return false
	}
	if f.After != nil && !(ListPosition{ID: cp.ID, ThreadID: cp.ThreadID, NS: cp.NS}).Follows(*f.After) {
		return false
	}
	return cp.Metadata.Contains(f.Metadata)
}
