package storetest

import (
	"testing"
	"time"

	"github.com/saver-dev/saver"
)

var expiryTests = []ledgerTest{
	{"FromLastChange", testExpiryFromLastChange},
	{"Held", testExpiryHeld},
	{"Failed", testExpiryFailed},
	{"CompleteAfterExpiry", testExpiryCompleteAfter},
}

// testExpiryFromLastChange checks that a key lives TTL after its last change
// (here a completion, then a retryable failure), not after its first claim,
// and is then claimed afresh: attempt 1, no past failure, a new holder.
func testExpiryFromLastChange(t *testing.T, l LedgerStore, clock *Clock) {
	in := NewClaim()
	c := MustClaim(t, l, in)
	clock.Advance(10 * time.Minute)
	MustComplete(t, l, in.Tenant, in.Key, c.Token, Result("done"))
	clock.Advance(in.TTL - time.Second)
	MustClaimEqual(t, l, in, completed(in.Key, 1, Result("done")))
	clock.Advance(time.Second)
	fresh := MustClaimEqual(t, l, in, granted(in, clock.Now(), 1, nil))
	MustErrorCode(t, "Complete(expired holder)", l.Complete(t.Context(), in.Tenant, in.Key, c.Token, Result("done")), saver.ECONFLICT)
	MustClaimEqual(t, l, in, inProgress(fresh))

	in = NewClaim()
	c = MustClaim(t, l, in)
	clock.Advance(30 * time.Minute)
	timeout := saver.ClaimError{Message: "timeout", Retryable: true}
	MustFail(t, l, in.Tenant, in.Key, c.Token, timeout)
	clock.Advance(in.TTL - time.Second)
	MustClaimEqual(t, l, in, granted(in, clock.Now(), 2, &timeout))

	in = NewClaim()
	c = MustClaim(t, l, in)
	MustFail(t, l, in.Tenant, in.Key, c.Token, timeout)
	clock.Advance(in.TTL)
	MustClaimEqual(t, l, in, granted(in, clock.Now(), 1, nil))
}

// testExpiryHeld lets a claimed key go uncompleted: until its TTL the next
// claim takes over (attempt 2); from its TTL on the key starts again.
func testExpiryHeld(t *testing.T, l LedgerStore, clock *Clock) {
	takeover, expired := NewClaim(), NewClaim()
	MustClaim(t, l, takeover)
	MustClaim(t, l, expired)
	clock.Advance(expired.TTL - time.Second)
	MustClaimEqual(t, l, takeover, granted(takeover, clock.Now(), 2, nil))
	clock.Advance(time.Second)
	MustClaimEqual(t, l, expired, granted(expired, clock.Now(), 1, nil))
}

// testExpiryFailed lets a permanent failure expire: it is reported until
// the TTL, and the key starts again after.
func testExpiryFailed(t *testing.T, l LedgerStore, clock *Clock) {
	in := NewClaim()
	c := MustClaim(t, l, in)
	declined := saver.ClaimError{Message: "declined"}
	MustFail(t, l, in.Tenant, in.Key, c.Token, declined)
	clock.Advance(in.TTL - time.Second)
	MustClaimEqual(t, l, in, failed(in.Key, 1, declined))
	clock.Advance(time.Second)
	MustClaimEqual(t, l, in, granted(in, clock.Now(), 1, nil))
}

// testExpiryCompleteAfter completes and fails keys whose record expired,
// held or completed: the key is unknown, even to its last holder.
func testExpiryCompleteAfter(t *testing.T, l LedgerStore, clock *Clock) {
	held := NewClaim()
	held.Lease, held.TTL = time.Minute, 2*time.Minute
	h := MustClaim(t, l, held)
	done := NewClaim()
	done.TTL = held.TTL
	d := MustClaim(t, l, done)
	MustComplete(t, l, done.Tenant, done.Key, d.Token, Result("done"))
	clock.Advance(held.TTL)
	MustErrorCode(t, "Complete(expired held key)", l.Complete(t.Context(), held.Tenant, held.Key, h.Token, Result("late")), saver.ENOTFOUND)
	MustErrorCode(t, "Fail(expired held key)", l.Fail(t.Context(), held.Tenant, held.Key, h.Token, saver.ClaimError{Message: "late"}), saver.ENOTFOUND)
	MustErrorCode(t, "Complete(expired completed key)", l.Complete(t.Context(), done.Tenant, done.Key, d.Token, Result("done")), saver.ENOTFOUND)
	// Nothing above brought the keys back.
	MustClaimEqual(t, l, held, granted(held, clock.Now(), 1, nil))
	MustClaimEqual(t, l, done, granted(done, clock.Now(), 1, nil))
}
