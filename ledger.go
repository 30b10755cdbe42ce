package saver

import (
	"context"
	"time"
)

// ClaimState is the outcome of claiming an idempotency key.
type ClaimState string

const (
	// ClaimClaimed: the caller holds the lease and performs the side effect,
	// then calls Complete or Fail with the token.
	ClaimClaimed ClaimState = "claimed"
	// ClaimInProgress: another caller holds an unexpired lease.
	ClaimInProgress ClaimState = "in_progress"
	// ClaimCompleted: the side effect happened; Result holds what it returned.
	ClaimCompleted ClaimState = "completed"
	// ClaimFailed: the side effect failed for good; Error says why. A failure
	// stored as retryable is never returned: the next claim is granted instead,
	// with the previous error attached.
	ClaimFailed ClaimState = "failed"
)

// ClaimError is a failure stored against a key.
type ClaimError struct {
	Message   string `msgpack:"message" json:"message"`
	Retryable bool   `msgpack:"retryable" json:"retryable"`
}

// ClaimRequest asks for the lease on an idempotency key.
type ClaimRequest struct {
	Tenant string
	Key    string
	// Lease is how long the claim holds before another caller may take over.
	Lease time.Duration
	// TTL is how long the key's record is kept after its last change.
	TTL time.Duration
	// ClaimID, when set, names the claim across resends: a claim whose
	// answer was lost and is sent again with the same ClaimID while the
	// lease it was granted runs is granted again, with the same token and
	// lease, rather than found in progress (held by itself).
	ClaimID string
}

// Claim is a key's record as a claim sees it.
type Claim struct {
	Key   string
	State ClaimState
	// Token proves ownership of a granted claim; only set when State is
	// ClaimClaimed. Complete and Fail must present it.
	Token string
	// LeaseExpiresAt is when the current holder's lease ends (claimed and
	// in_progress).
	LeaseExpiresAt time.Time
	// Attempt counts the claims granted on this key, starting at 1.
	Attempt int
	// Result is the stored result (completed).
	Result *Typed
	// Error is the stored failure (failed), or the previous retryable failure
	// when a claim is granted after one.
	Error *ClaimError
}

// Limits on ledger requests.
const (
	MaxLease      = time.Hour
	MaxTTL        = 90 * 24 * time.Hour
	MaxClaimIDLen = 128
)

// Validate checks a claim request.
func (r ClaimRequest) Validate() error {
	if err := validID("key", r.Key, true, MaxIDBytes); err != nil {
		return err
	}
	if r.Lease <= 0 || r.Lease > MaxLease {
		return Errorf(EINVALID, "lease must be positive and at most %s.", MaxLease)
	}
	if r.TTL < r.Lease || r.TTL > MaxTTL {
		return Errorf(EINVALID, "ttl must be at least the lease and at most %s.", MaxTTL)
	}
	return validID("claim_id", r.ClaimID, false, MaxClaimIDLen)
}

// Ledger is the idempotency ledger: a step claims a key before a side effect,
// so that a replayed step finds the effect already done instead of repeating it.
type Ledger interface {
	// Claim grants the lease when the key is new, its lease expired, or its
	// last failure was retryable; otherwise it reports the key's state. Of
	// any number of concurrent claims on a key, exactly one is granted. A
	// resend (the ClaimID of the running lease) gets that lease again.
	Claim(ctx context.Context, in ClaimRequest) (*Claim, error)

	// Complete stores the result of a claimed key.
	// Returns ECONFLICT if token is not the current holder's (the lease
	// expired and another caller claimed the key), ENOTFOUND if the key is
	// unknown or expired.
	Complete(ctx context.Context, tenant, key, token string, result Typed) error

	// Fail stores a failure of a claimed key; errors as for Complete.
	Fail(ctx context.Context, tenant, key, token string, failure ClaimError) error
}
