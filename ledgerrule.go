package saver

import (
	"bytes"
	"time"
)

// The ledger's rules, written once for every store: which claims a live
// record answers without a grant, when a repeated outcome is the same one,
// and the messages of a refused Complete or Fail.

// ClaimRecord is what the claim rules read of a key's live (unexpired)
// record; each store decodes its own record into it.
type ClaimRecord struct {
	State          ClaimState
	Token          string
	ClaimID        string
	Attempt        int
	LeaseExpiresAt time.Time
	Outcome
}

// Outcome is what Complete or Fail stores: the state with its result
// (completed) or its error (failed).
type Outcome struct {
	State  ClaimState
	Result *Typed
	Error  *ClaimError
}

// Answer returns the answer to a claim on key, named claimID, at now when the
// record does not grant it; nil when the claim is to be granted (the lease
// ran out, or the last failure was retryable).
func (r *ClaimRecord) Answer(key, claimID string, now time.Time) *Claim {
	c := &Claim{Key: key, State: r.State, Attempt: r.Attempt}
	held := r.State == ClaimClaimed && now.Before(r.LeaseExpiresAt)
	switch {
	case r.State == ClaimCompleted:
		c.Result = r.Result
	case r.State == ClaimFailed && (r.Error == nil || !r.Error.Retryable):
		c.Error = r.Error
	case held && claimID != "" && r.ClaimID == claimID:
		// A resend of the claim that holds the lease: its grant again.
		c.Token, c.LeaseExpiresAt, c.Error = r.Token, r.LeaseExpiresAt, r.Error
	case held:
		c.State, c.LeaseExpiresAt = ClaimInProgress, r.LeaseExpiresAt
	default:
		return nil
	}
	return c
}

// Same reports whether stored is exactly the outcome o, so that a repeated
// Complete or Fail (a retry of a lost answer) is accepted.
func (o Outcome) Same(stored Outcome) bool {
	if stored.State != o.State {
		return false
	}
	if o.State == ClaimCompleted {
		return stored.Result != nil && stored.Result.Type == o.Result.Type && bytes.Equal(stored.Result.Data, o.Result.Data)
	}
	return stored.Error != nil && *stored.Error == *o.Error
}

// ErrClaimUnknown refuses a Complete or Fail on a key with no live record.
func ErrClaimUnknown(key string) error {
	return Errorf(ENOTFOUND, "Idempotency key %q is unknown or expired.", key)
}

// ErrClaimNotHeld refuses a Complete or Fail whose token is not the holder's.
func ErrClaimNotHeld(key string) error {
	return Errorf(ECONFLICT, "The token does not hold key %q: its lease ran out and another caller claimed the key, or it is not a token of this key.", key)
}

// ErrClaimSettled refuses an outcome other than the one key already has.
func ErrClaimSettled(key string, state ClaimState) error {
	return Errorf(ECONFLICT, "Key %q already has another outcome: %s.", key, state)
}
