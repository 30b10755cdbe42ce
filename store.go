package saver

import (
	"cmp"
	"context"
	"strings"
)

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

	// ListCheckpoints returns the checkpoints matching f in listing order
	// (see ComparePositions): newest first.
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

// Position returns the checkpoint's place in the listing order.
func (r CheckpointRef) Position() ListPosition {
	return ListPosition{ID: r.ID, ThreadID: r.ThreadID, NS: r.NS}
}

// ComparePositions orders checkpoints as every listing does, returning a
// negative number when a comes first: newest first, which is checkpoint id
// descending (LangGraph's ids sort by time, so that the latest of a
// namespace is its largest id), and checkpoints of the same id, in other
// threads or namespaces, by thread then namespace ascending. So the
// namespaces of a thread interleave by id rather than follow one another.
func ComparePositions(a, b ListPosition) int {
	return cmp.Or(
		strings.Compare(b.ID, a.ID),
		strings.Compare(a.ThreadID, b.ThreadID),
		strings.Compare(a.NS, b.NS))
}

// Follows reports whether a checkpoint at p comes strictly after cur in the
// listing order (see ComparePositions).
func (p ListPosition) Follows(cur ListPosition) bool { return ComparePositions(p, cur) > 0 }

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
	if f.After != nil && !cp.Position().Follows(*f.After) {
		return false
	}
	return cp.Metadata.Contains(f.Metadata)
}

// RunSet holds the run ids a DeleteForRuns call names, for the store to
// look up each checkpoint's run_id in as it finds the tenant's checkpoints.
type RunSet map[string]bool

// NewRunSet returns the set of runIDs.
func NewRunSet(runIDs []string) RunSet {
	s := make(RunSet, len(runIDs))
	for _, r := range runIDs {
		s[r] = true
	}
	return s
}
