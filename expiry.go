package saver

import (
	"context"
	"time"
)

// Scope is a thread's retention class, chosen per thread by the client.
type Scope string

const (
	// ScopeSession: short-lived data (a chat session); expires after hours.
	ScopeSession Scope = "session"
	// ScopePersistent: long-lived data; expires after a long time or never.
	ScopePersistent Scope = "persistent"
)

// Validate accepts the two scopes and "" (the server's default).
func (s Scope) Validate() error {
	switch s {
	case "", ScopeSession, ScopePersistent:
		return nil
	}
	return Errorf(EINVALID, "scope %q is unknown; use %q or %q.", s, ScopeSession, ScopePersistent)
}

// Expired reports whether an item with expiresAt (epoch seconds, 0 = never)
// has expired at now. Stores filter every read with it: backends reap
// expired items late (DynamoDB within days), so reads must not rely on it.
func Expired(expiresAt int64, now time.Time) bool {
	return expiresAt != 0 && expiresAt <= now.Unix()
}

// Later returns the later of two expiries, where 0 (never) is the latest.
func Later(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	return max(a, b)
}

// Expiry invariants, which every store keeps:
//
//   - A checkpoint is invisible once expired (get, list, tree, copy).
//   - Writes are invisible once expired.
//   - A blob lives at least as long as every checkpoint that references it:
//     blobs are shared across checkpoints (an unchanged channel is never
//     rewritten), so putting a checkpoint extends the expiry of the blobs it
//     references when theirs is earlier.
//   - The blob lifetime rule: a blob gets twice the remaining lifetime of
//     the checkpoint that brings it (NewBlobExpiry) or extends it
//     (ExtendedBlobExpiry). In a session thread every put moves the expiry
//     forward, and an unchanged channel is referenced by every put: a blob
//     given only its checkpoint's lifetime would be extended by the very
//     next put, which costs DynamoDB a request more and the embedded store a
//     rewrite of the blob's record. With twice, an unchanged channel is
//     extended about once per lifetime. The price is that a blob may outlive
//     the last checkpoint referencing it by up to one lifetime, until it
//     expires and is swept.
//   - A pinned checkpoint (ExpiresAt 0) pins its blobs and writes too.

// Expirer is implemented by stores that can change a stored checkpoint's
// expiry: pinning (expiresAt 0) and refresh-on-read.
type Expirer interface {
	// SetExpiry sets the expiry of the checkpoint ref names and extends
	// (never shortens) the expiry of its blobs and writes to match. ref.ID
	// is required: an expiry is changed on a checkpoint the caller has read
	// (refresh-on-read) or names (pin), and "the latest" could be another
	// one by the time the call lands.
	// Returns EINVALID for an empty ref.ID (see RequireCheckpointID), and
	// ENOTFOUND if the checkpoint does not exist or has expired.
	SetExpiry(ctx context.Context, ref CheckpointRef, expiresAt int64) error
}

// RequireCheckpointID returns EINVALID unless ref names a checkpoint by id,
// as SetExpiry requires.
func RequireCheckpointID(ref CheckpointRef) error {
	if ref.ID == "" {
		return Errorf(EINVALID, "checkpoint_id is required.")
	}
	return nil
}

// NewBlobExpiry applies the blob lifetime rule above to a blob that a put
// brings: given the expiry of the checkpoint being put (0 never), it returns
// the blob's, twice the checkpoint's remaining lifetime from now.
func NewBlobExpiry(checkpoint int64, now time.Time) int64 {
	if checkpoint == 0 {
		return 0
	}
	return checkpoint + max(checkpoint-now.Unix(), 0)
}

// ExtendedBlobExpiry applies the blob lifetime rule above to a blob that a
// put references: given the expiry of the checkpoint being put and of the
// blob, it returns the blob's new expiry and whether it must be written,
// which it must only when the blob would expire before the checkpoint.
func ExtendedBlobExpiry(checkpoint, blob int64, now time.Time) (int64, bool) {
	switch {
	case blob == 0:
		return 0, false // never expires already
	case checkpoint == 0:
		return 0, true // pinned or persistent forever: so is the blob
	case blob >= checkpoint:
		return blob, false
	}
	return NewBlobExpiry(checkpoint, now), true
}
