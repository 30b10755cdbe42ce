package storetest

import (
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/saver-dev/saver"
)

// LedgerStore is a store that also keeps the idempotency ledger: the ledger
// contract checks that thread operations leave ledger keys alone.
type LedgerStore interface {
	saver.Store
	saver.Ledger
}

// ledgerTest is one subtest of the ledger contract. The store reads the time
// from clock, which only the test moves.
type ledgerTest = clockTest[LedgerStore]

// RunLedger runs the contract of saver.Ledger against the store that open
// returns. open is called once per subtest, possibly in parallel, with the
// subtest's own clock: the store must take the time of every ledger call from
// now (a store with a `Now func() time.Time` field sets it to now). Stores
// that share their data, such as one DynamoDB table, return a new store
// value over the shared data for each call, so that each subtest drives its
// own clock; every subtest uses its own random tenants and keys.
//
// Times in the contract are whole seconds (see NewClock), and a lease or key
// that expires at T is expired at T.
func RunLedger(t *testing.T, open func(t *testing.T, now func() time.Time) LedgerStore) {
	runClockGroups(t, []group[ledgerTest]{
		{"Claim", claimTests},
		{"Complete", completeTests},
		{"Fail", failTests},
		{"Expiry", expiryTests},
		{"Isolation", ledgerIsolationTests},
		{"Concurrency", ledgerConcurrencyTests},
	}, open)
}

// NewClaim returns a claim request for a key no other test uses, in a new
// tenant, with a one-minute lease and a one-hour TTL.
func NewClaim() saver.ClaimRequest {
	return saver.ClaimRequest{Tenant: NewTenant(), Key: "key-" + rand.Text(), Lease: time.Minute, TTL: time.Hour}
}

// Result returns a result holding s after bytes that a text-only store would
// mangle.
func Result(s string) saver.Typed {
	return saver.Typed{Type: "msgpack", Data: append([]byte{0x00, 0xff, 0x01, 0x80}, s...)}
}

// MustClaim validates in, as the API does, and claims its key.
func MustClaim(tb testing.TB, l saver.Ledger, in saver.ClaimRequest) *saver.Claim {
	tb.Helper()
	if err := in.Validate(); err != nil {
		tb.Fatalf("Validate(claim %q): %v", in.Key, err)
	}
	c, err := l.Claim(tb.Context(), in)
	if err != nil {
		tb.Fatalf("Claim(%q): %v", in.Key, err)
	}
	if c == nil {
		tb.Fatalf("Claim(%q) = nil, nil", in.Key)
	}
	return c
}

// MustClaimEqual claims in's key and fails unless the claim is want; see
// MustEqualClaim. It returns the claim, whose token a granted claim needs.
func MustClaimEqual(tb testing.TB, l saver.Ledger, in saver.ClaimRequest, want saver.Claim) *saver.Claim {
	tb.Helper()
	c := MustClaim(tb, l, in)
	MustEqualClaim(tb, c, want)
	return c
}

// ClaimOptions compare claims as the contract defines them: times by instant,
// and tokens not at all (they are random).
var ClaimOptions = cmp.Options{cmpopts.IgnoreFields(saver.Claim{}, "Token")}

// MustEqualClaim fails unless got is want, token aside: a granted claim has a
// token, any other has none.
func MustEqualClaim(tb testing.TB, got *saver.Claim, want saver.Claim) {
	tb.Helper()
	if diff := cmp.Diff(&want, got, ClaimOptions); diff != "" {
		tb.Fatalf("claim of %q mismatch (-want +got):\n%s", want.Key, diff)
	}
	if granted := want.State == saver.ClaimClaimed; granted != (got.Token != "") {
		tb.Fatalf("claim of %q in state %s has token %q", want.Key, got.State, got.Token)
	}
}

// MustComplete completes a claimed key.
func MustComplete(tb testing.TB, l saver.Ledger, tenant, key, token string, result saver.Typed) {
	tb.Helper()
	if err := l.Complete(tb.Context(), tenant, key, token, result); err != nil {
		tb.Fatalf("Complete(%q): %v", key, err)
	}
}

// MustFail stores a failure of a claimed key.
func MustFail(tb testing.TB, l saver.Ledger, tenant, key, token string, failure saver.ClaimError) {
	tb.Helper()
	if err := l.Fail(tb.Context(), tenant, key, token, failure); err != nil {
		tb.Fatalf("Fail(%q): %v", key, err)
	}
}

// MustErrorCode fails unless err carries code; what names the call.
func MustErrorCode(tb testing.TB, what string, err error, code string) {
	tb.Helper()
	if got := saver.ErrorCode(err); got != code {
		tb.Fatalf("%s: error code = %q (%v), want %q", what, got, err, code)
	}
}

// Wanted claims, as the contract defines each state.

func granted(in saver.ClaimRequest, now time.Time, attempt int, prev *saver.ClaimError) saver.Claim {
	return saver.Claim{Key: in.Key, State: saver.ClaimClaimed, LeaseExpiresAt: now.Add(in.Lease), Attempt: attempt, Error: prev}
}

func inProgress(holder *saver.Claim) saver.Claim {
	return saver.Claim{Key: holder.Key, State: saver.ClaimInProgress, LeaseExpiresAt: holder.LeaseExpiresAt, Attempt: holder.Attempt}
}

func completed(key string, attempt int, result saver.Typed) saver.Claim {
	return saver.Claim{Key: key, State: saver.ClaimCompleted, Attempt: attempt, Result: &result}
}

func failed(key string, attempt int, failure saver.ClaimError) saver.Claim {
	return saver.Claim{Key: key, State: saver.ClaimFailed, Attempt: attempt, Error: &failure}
}

var claimTests = []ledgerTest{
	{"NewKey", testClaimNewKey},
	{"InProgress", testClaimInProgress},
	{"LeaseExpiry", testClaimLeaseExpiry},
	{"Limits", testClaimLimits},
	{"Resend", testClaimResend},
}

// testClaimResend sends a granted claim again with its claim id, as a client
// does when the answer was lost: while the lease runs it gets the same grant
// (token, lease, attempt), where other claims see it in progress; once the
// lease ended, or the key completed, the resend is a claim like any other.
func testClaimResend(t *testing.T, l LedgerStore, clock *Clock) {
	in := NewClaim()
	in.ClaimID = "claim-" + rand.Text()
	first := MustClaim(t, l, in)
	if first.State != saver.ClaimClaimed {
		t.Fatalf("first claim: %s", first.State)
	}
	clock.Advance(30 * time.Second)
	again := MustClaim(t, l, in)
	if again.State != saver.ClaimClaimed || again.Token != first.Token || !again.LeaseExpiresAt.Equal(first.LeaseExpiresAt) || again.Attempt != 1 {
		t.Fatalf("resend: %+v; want the first grant again %+v", again, first)
	}
	for name, other := range map[string]string{"another id": "claim-" + rand.Text(), "no id": ""} {
		o := in
		o.ClaimID = other
		if c := MustClaim(t, l, o); c.State != saver.ClaimInProgress || c.Token != "" {
			t.Fatalf("claim with %s: %+v; want in_progress", name, c)
		}
	}
	// Past the lease the resend takes the key over as a new attempt.
	clock.Advance(31 * time.Second)
	late := MustClaim(t, l, in)
	if late.State != saver.ClaimClaimed || late.Token == first.Token || late.Attempt != 2 {
		t.Fatalf("resend after the lease: %+v; want a new grant, attempt 2", late)
	}
	if err := l.Complete(t.Context(), in.Tenant, in.Key, late.Token, Result("done")); err != nil {
		t.Fatal(err)
	}
	if c := MustClaim(t, l, in); c.State != saver.ClaimCompleted {
		t.Fatalf("resend after completion: %s; want completed", c.State)
	}
}

func testClaimNewKey(t *testing.T, l LedgerStore, clock *Clock) {
	in := NewClaim()
	MustClaimEqual(t, l, in, granted(in, clock.Now(), 1, nil))
}

// testClaimInProgress claims a held key until just before its lease ends:
// every claim sees the holder's lease and gets no token.
func testClaimInProgress(t *testing.T, l LedgerStore, clock *Clock) {
	in := NewClaim()
	holder := MustClaim(t, l, in)
	MustClaimEqual(t, l, in, inProgress(holder))
	clock.Advance(in.Lease - time.Second)
	// Another caller's lease and TTL do not matter while the key is held.
	other := in
	other.Lease, other.TTL = 10*time.Second, 10*time.Second
	MustClaimEqual(t, l, other, inProgress(holder))
	MustClaimEqual(t, l, in, inProgress(holder))
}

// testClaimLeaseExpiry lets leases run out twice: each time the next claim
// is granted with a new token and the next attempt number, and the
// superseded holders can no longer complete or fail.
func testClaimLeaseExpiry(t *testing.T, l LedgerStore, clock *Clock) {
	in := NewClaim()
	first := MustClaim(t, l, in)
	clock.Advance(in.Lease)
	second := MustClaimEqual(t, l, in, granted(in, clock.Now(), 2, nil))
	MustClaimEqual(t, l, in, inProgress(second))
	clock.Advance(in.Lease + time.Second)
	third := MustClaimEqual(t, l, in, granted(in, clock.Now(), 3, nil))
	if first.Token == second.Token || second.Token == third.Token || first.Token == third.Token {
		t.Fatalf("tokens repeat: %q, %q, %q", first.Token, second.Token, third.Token)
	}
	for _, old := range []*saver.Claim{first, second} {
		MustErrorCode(t, "Complete(superseded token)", l.Complete(t.Context(), in.Tenant, in.Key, old.Token, Result("late")), saver.ECONFLICT)
		MustErrorCode(t, "Fail(superseded token)", l.Fail(t.Context(), in.Tenant, in.Key, old.Token, saver.ClaimError{Message: "late"}), saver.ECONFLICT)
	}
	MustClaimEqual(t, l, in, inProgress(third))
	MustComplete(t, l, in.Tenant, in.Key, third.Token, Result("third"))
	MustClaimEqual(t, l, in, completed(in.Key, 3, Result("third")))
}

// testClaimLimits claims with the longest lease and TTL a request may ask
// for.
func testClaimLimits(t *testing.T, l LedgerStore, clock *Clock) {
	in := NewClaim()
	in.Lease, in.TTL = saver.MaxLease, saver.MaxTTL
	in.ClaimID = strings.Repeat("c", saver.MaxClaimIDLen)
	holder := MustClaimEqual(t, l, in, granted(in, clock.Now(), 1, nil))
	MustClaimEqual(t, l, in, *holder) // a resend
	clock.Advance(saver.MaxLease - time.Second)
	in.ClaimID = ""
	MustClaimEqual(t, l, in, inProgress(holder))
	MustComplete(t, l, in.Tenant, in.Key, holder.Token, Result("done"))
	clock.Advance(saver.MaxTTL - time.Second)
	MustClaimEqual(t, l, in, completed(in.Key, 1, Result("done")))
}

var completeTests = []ledgerTest{
	{"Completed", testCompleteCompleted},
	{"Twice", testCompleteTwice},
	{"LateBeforeTakeover", testCompleteLateBeforeTakeover},
	{"WrongToken", testCompleteWrongToken},
	{"UnknownKey", testCompleteUnknownKey},
}

// testCompleteCompleted completes a claim: every later claim, after the
// lease and until the key expires, returns the exact result.
func testCompleteCompleted(t *testing.T, l LedgerStore, clock *Clock) {
	in := NewClaim()
	c := MustClaim(t, l, in)
	result := Result("charged 42")
	MustComplete(t, l, in.Tenant, in.Key, c.Token, result)
	want := completed(in.Key, 1, result)
	MustClaimEqual(t, l, in, want)
	clock.Advance(in.Lease)
	MustClaimEqual(t, l, in, want)
	clock.Advance(in.TTL - in.Lease - time.Second)
	MustClaimEqual(t, l, in, want)
}

// testCompleteTwice repeats a completion, as a client retrying after a lost
// response does: the same result is accepted, another outcome is not, and
// the stored result stays the first.
func testCompleteTwice(t *testing.T, l LedgerStore, clock *Clock) {
	in := NewClaim()
	c := MustClaim(t, l, in)
	result := Result("once")
	MustComplete(t, l, in.Tenant, in.Key, c.Token, result)
	clock.Advance(time.Second)
	MustComplete(t, l, in.Tenant, in.Key, c.Token, result)
	MustErrorCode(t, "Complete(other result)", l.Complete(t.Context(), in.Tenant, in.Key, c.Token, Result("twice")), saver.ECONFLICT)
	MustErrorCode(t, "Complete(other type)", l.Complete(t.Context(), in.Tenant, in.Key, c.Token, saver.Typed{Type: "json", Data: result.Data}), saver.ECONFLICT)
	MustErrorCode(t, "Fail(after complete)", l.Fail(t.Context(), in.Tenant, in.Key, c.Token, saver.ClaimError{Message: "no"}), saver.ECONFLICT)
	MustClaimEqual(t, l, in, completed(in.Key, 1, result))
}

// testCompleteLateBeforeTakeover completes after the lease ended but before
// anyone claimed the key again: the holder is still the holder.
func testCompleteLateBeforeTakeover(t *testing.T, l LedgerStore, clock *Clock) {
	in := NewClaim()
	c := MustClaim(t, l, in)
	clock.Advance(in.Lease + time.Second)
	MustComplete(t, l, in.Tenant, in.Key, c.Token, Result("late"))
	MustClaimEqual(t, l, in, completed(in.Key, 1, Result("late")))
}

// testCompleteWrongToken presents tokens that are not the holder's: the
// key stays held.
func testCompleteWrongToken(t *testing.T, l LedgerStore, clock *Clock) {
	in := NewClaim()
	holder := MustClaim(t, l, in)
	other := MustClaim(t, l, NewClaim())
	for _, token := range []string{"not-a-token", other.Token, holder.Token + "x", holder.Token[:len(holder.Token)-1]} {
		MustErrorCode(t, "Complete(wrong token)", l.Complete(t.Context(), in.Tenant, in.Key, token, Result("x")), saver.ECONFLICT)
		MustErrorCode(t, "Fail(wrong token)", l.Fail(t.Context(), in.Tenant, in.Key, token, saver.ClaimError{Message: "x"}), saver.ECONFLICT)
	}
	MustClaimEqual(t, l, in, inProgress(holder))
	MustComplete(t, l, in.Tenant, in.Key, holder.Token, Result("mine"))
	MustClaimEqual(t, l, in, completed(in.Key, 1, Result("mine")))
}

// testCompleteUnknownKey completes and fails keys that were never claimed,
// with a real token of another key.
func testCompleteUnknownKey(t *testing.T, l LedgerStore, clock *Clock) {
	in := NewClaim()
	c := MustClaim(t, l, in)
	for _, key := range []string{"never-claimed", in.Key + "x", in.Key[:len(in.Key)-1]} {
		MustErrorCode(t, "Complete(unknown key)", l.Complete(t.Context(), in.Tenant, key, c.Token, Result("x")), saver.ENOTFOUND)
		MustErrorCode(t, "Fail(unknown key)", l.Fail(t.Context(), in.Tenant, key, c.Token, saver.ClaimError{Message: "x"}), saver.ENOTFOUND)
	}
	MustClaimEqual(t, l, in, inProgress(c))
}

var failTests = []ledgerTest{
	{"Permanent", testFailPermanent},
	{"Retryable", testFailRetryable},
	{"Twice", testFailTwice},
}

// testFailPermanent stores a failure that is not retryable: every later
// claim, after the lease and until the key expires, reports it.
func testFailPermanent(t *testing.T, l LedgerStore, clock *Clock) {
	in := NewClaim()
	c := MustClaim(t, l, in)
	failure := saver.ClaimError{Message: "card declined: \x00 ü"}
	MustFail(t, l, in.Tenant, in.Key, c.Token, failure)
	want := failed(in.Key, 1, failure)
	MustClaimEqual(t, l, in, want)
	clock.Advance(in.Lease + time.Second)
	MustClaimEqual(t, l, in, want)
	MustErrorCode(t, "Complete(after fail)", l.Complete(t.Context(), in.Tenant, in.Key, c.Token, Result("x")), saver.ECONFLICT)
	MustClaimEqual(t, l, in, want)
}

// testFailRetryable stores retryable failures: the next claim is granted at
// once, carrying the failure, and the failed holder's token is superseded.
func testFailRetryable(t *testing.T, l LedgerStore, clock *Clock) {
	in := NewClaim()
	first := MustClaim(t, l, in)
	timeout := saver.ClaimError{Message: "gateway timeout", Retryable: true}
	MustFail(t, l, in.Tenant, in.Key, first.Token, timeout)
	clock.Advance(time.Second)
	second := MustClaimEqual(t, l, in, granted(in, clock.Now(), 2, &timeout))
	MustClaimEqual(t, l, in, inProgress(second))
	MustErrorCode(t, "Complete(failed holder)", l.Complete(t.Context(), in.Tenant, in.Key, first.Token, Result("x")), saver.ECONFLICT)
	MustErrorCode(t, "Fail(failed holder)", l.Fail(t.Context(), in.Tenant, in.Key, first.Token, timeout), saver.ECONFLICT)

	// A second retryable failure, then a permanent one.
	unavailable := saver.ClaimError{Message: "503", Retryable: true}
	MustFail(t, l, in.Tenant, in.Key, second.Token, unavailable)
	third := MustClaimEqual(t, l, in, granted(in, clock.Now(), 3, &unavailable))
	declined := saver.ClaimError{Message: "declined"}
	MustFail(t, l, in.Tenant, in.Key, third.Token, declined)
	MustClaimEqual(t, l, in, failed(in.Key, 3, declined))

	// A retried attempt that succeeds reports only its result.
	in = NewClaim()
	first = MustClaim(t, l, in)
	MustFail(t, l, in.Tenant, in.Key, first.Token, timeout)
	second = MustClaim(t, l, in)
	MustComplete(t, l, in.Tenant, in.Key, second.Token, Result("ok"))
	MustClaimEqual(t, l, in, completed(in.Key, 2, Result("ok")))
}

// testFailTwice repeats a failure: the same failure is accepted, another
// outcome is not.
func testFailTwice(t *testing.T, l LedgerStore, clock *Clock) {
	for _, retryable := range []bool{false, true} {
		in := NewClaim()
		c := MustClaim(t, l, in)
		failure := saver.ClaimError{Message: "boom", Retryable: retryable}
		MustFail(t, l, in.Tenant, in.Key, c.Token, failure)
		clock.Advance(time.Second)
		MustFail(t, l, in.Tenant, in.Key, c.Token, failure)
		for _, other := range []saver.ClaimError{{Message: "bang", Retryable: retryable}, {Message: "boom", Retryable: !retryable}} {
			MustErrorCode(t, "Fail(other failure)", l.Fail(t.Context(), in.Tenant, in.Key, c.Token, other), saver.ECONFLICT)
		}
		MustErrorCode(t, "Complete(after fail)", l.Complete(t.Context(), in.Tenant, in.Key, c.Token, Result("x")), saver.ECONFLICT)
		if retryable {
			MustClaimEqual(t, l, in, granted(in, clock.Now(), 2, &failure))
		} else {
			MustClaimEqual(t, l, in, failed(in.Key, 1, failure))
		}
	}
}
