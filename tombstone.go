package saver

import "time"

// Tombstones keep deleted threads deleted (LangGraph issue 7206: a late put
// or put_writes that reuses a config from before delete_thread would bring
// the thread back).
//
// A deletion (DeleteThread, DeleteForRuns, Prune with PruneDelete) leaves
// a tombstone for every checkpoint it removes, keyed (tenant, thread, ns,
// checkpoint id), for the tombstone lifetime. While it lasts, the store
// refuses with CheckpointDeleted (EGONE), storing nothing:
//
//   - a put whose parent (the config's checkpoint_id) is tombstoned: a late
//     step of a run whose thread was deleted;
//   - a put of a tombstoned checkpoint id: a late re-put of a deleted
//     checkpoint;
//   - put_writes against a tombstoned checkpoint.
//
// A put without a parent (a fresh run on the same thread id) is accepted,
// and so is every put continuing it. A parent that was never stored is not
// refused either: only what a deletion removed is. PruneKeepLatest leaves
// no tombstones: what it removes are ancestors of a checkpoint it keeps,
// and a fork from one of them (time travel to a pruned step) is the
// caller's to make. CopyThread copies no tombstones.
//
// A put racing the deletion of its parent does not survive it: the store
// checks the tombstones in the put's own commit (the embedded store) or
// transaction (DynamoDB), and a deletion tombstones before it deletes and
// then removes, pass after pass, any checkpoint whose parent it buried, so
// a put that passed its check just before is removed with its writes.
//
// After the lifetime a tombstone expires and a late put is stored again,
// as if it were new: the lifetime must outlast the longest a run may go on
// after its thread is deleted.

// DefaultTombstoneLifetime is how long a deletion's tombstones last unless
// configured otherwise.
const DefaultTombstoneLifetime = 7 * 24 * time.Hour

// TombstoneExpiry is the expiry (epoch seconds) of a tombstone laid at now.
func TombstoneExpiry(now time.Time, lifetime time.Duration) int64 {
	return now.Add(lifetime).Unix()
}
