package saver

// PruneStrategy says what Store.Prune keeps.
type PruneStrategy string

const (
	// PruneKeepLatest keeps the newest checkpoint of each namespace and its writes.
	PruneKeepLatest PruneStrategy = "keep_latest"
	// PruneDelete removes the threads entirely.
	PruneDelete PruneStrategy = "delete"
)

// Validate accepts the two strategies. The API reads "" as PruneKeepLatest
// before it validates; a store is always given one of the two.
func (p PruneStrategy) Validate() error {
	switch p {
	case PruneKeepLatest, PruneDelete:
		return nil
	}
	return Errorf(EINVALID, "strategy %q is unknown; use %q or %q.", p, PruneKeepLatest, PruneDelete)
}
