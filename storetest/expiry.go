package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver"
)

// ExpiryStore is a store that keeps expiries: the expiry contract puts
// through saver.Store, changes expiries through saver.Expirer, and checks
// that expired checkpoints are gone from saver.TreeStore's nodes too.
type ExpiryStore interface {
	saver.Store
	saver.Expirer
	saver.TreeStore
}

// expiryTest is one subtest of the expiry contract. The store reads the
// time from clock, which only the test moves.
type expiryTest = clockTest[ExpiryStore]

// RunExpiry runs the expiry contract (see saver's expiry invariants) against
// the store that open returns, on the terms of RunLedger: open is called
// once per subtest, possibly in parallel, with the subtest's own clock, from
// which the store must take the time of every call. Stores that share their
// data, such as one DynamoDB table, return a new store value over it for
// each call; every subtest uses its own random tenants and threads, and
// every expiry it sets is in the clock's future when set.
//
// Times are whole seconds, and an item that expires at T is expired at T.
// The contract:
//
//   - A checkpoint with ExpiresAt E is returned, with its Scope and
//     ExpiresAt, until E, and from E on it is absent: GetTuple by id, the
//     latest (which falls back to the newest live checkpoint), listings
//     (before their limit), nodes, CopyThread and Prune's keep_latest.
//     ExpiresAt 0 never expires. Putting a checkpoint again replaces its
//     expiry, and brings an expired one back.
//   - Writes expire at their own ExpiresAt, in tuples and in node flags.
//     An expired write or blob is absent: putting it again stores it.
//   - A blob lives at least as long as every checkpoint whose channel
//     versions reference it, whichever checkpoint wrote it: ExpiresAt 0
//     keeps it forever. Copies keep the expiries of what they copy.
//   - SetExpiry sets a live checkpoint's expiry, 0 pinning it, and extends
//     its blobs and writes to match, never shortening them. It returns
//     ENOTFOUND for a checkpoint that is missing or expired, and EINVALID
//     for a ref without a checkpoint id, changing nothing.
//   - A deletion's tombstones (saver's tombstone.go) refuse late writes for
//     saver.DefaultTombstoneLifetime, the store's default, and then expire.
func RunExpiry(t *testing.T, open func(t *testing.T, now func() time.Time) ExpiryStore) {
	runClockGroups(t, []group[expiryTest]{
		{"Checkpoints", expiryCheckpointTests},
		{"Writes", expiryWriteTests},
		{"Blobs", expiryBlobTests},
		{"SetExpiry", setExpiryTests},
		{"Threads", expiryThreadTests},
		{"DeltaHistory", expiryDeltaTests},
		{"Tombstones", expiryTombstoneTests},
	}, open)
}

// Expiring returns in expiring at expiresAt, in the session scope, or in
// the persistent scope when expiresAt is 0 (never).
func Expiring(in saver.PutCheckpoint, expiresAt int64) saver.PutCheckpoint {
	in.ExpiresAt = expiresAt
	in.Scope = saver.ScopeSession
	if expiresAt == 0 {
		in.Scope = saver.ScopePersistent
	}
	return in
}

// MustPutExpiringWrites validates writes against ref that expire at
// expiresAt, as the API does, and puts them.
func MustPutExpiringWrites(tb testing.TB, s saver.Store, ref saver.CheckpointRef, expiresAt int64, writes ...saver.Write) {
	tb.Helper()
	in := saver.PutWrites{CheckpointRef: ref, Writes: writes, ExpiresAt: expiresAt}
	if err := in.Validate(); err != nil {
		tb.Fatalf("Validate(writes on %s): %v", ref.ID, err)
	}
	if err := s.PutWrites(tb.Context(), in); err != nil {
		tb.Fatalf("PutWrites(%s, expiring at %d): %v", ref.ID, expiresAt, err)
	}
}

// MustSetExpiry sets the expiry of the checkpoint named by ref.
func MustSetExpiry(tb testing.TB, s saver.Expirer, ref saver.CheckpointRef, expiresAt int64) {
	tb.Helper()
	if err := s.SetExpiry(tb.Context(), ref, expiresAt); err != nil {
		tb.Fatalf("SetExpiry(%+v, %d): %v", ref, expiresAt, err)
	}
}

// advanceTo moves the clock forward to t.
func advanceTo(clock *Clock, t time.Time) { clock.Advance(t.Sub(clock.Now())) }

// forever is far enough ahead that anything with an expiry has expired.
const forever = 100 * 365 * 24 * time.Hour

// mustBeEmpty checks that the thread shows no checkpoint: no latest in the
// root namespace, no listing and no node.
func mustBeEmpty(t *testing.T, s ExpiryStore, ref saver.CheckpointRef) {
	t.Helper()
	MustNotFind(t, s, InNS(ref, ""))
	if got := MustListThread(t, s, ref.Tenant, ref.ThreadID); len(got) != 0 {
		t.Fatalf("thread %s lists %v", ref.ThreadID, Positions(got))
	}
	if got := MustListNodes(t, s, ref.Tenant, ref.ThreadID); len(got) != 0 {
		t.Fatalf("thread %s has nodes %+v", ref.ThreadID, got)
	}
}

// mustShow checks that the thread shows exactly want, newest first: by id,
// in its listing and as its nodes.
func mustShow(t *testing.T, s ExpiryStore, ref saver.CheckpointRef, want ...*saver.Tuple) {
	t.Helper()
	var nodes []saver.Node
	for _, w := range want {
		MustEqualTuple(t, MustGetTuple(t, s, w.CheckpointRef), w)
		nodes = append(nodes, nodeOf(w))
	}
	MustEqualTuples(t, MustListThread(t, s, ref.Tenant, ref.ThreadID), want)
	MustEqualNodes(t, s, ref.Tenant, ref.ThreadID, nodes)
}

// nodeOf returns the node of a tuple whose metadata NewCheckpoint set.
func nodeOf(tup *saver.Tuple) saver.Node {
	n := saver.Node{ThreadID: tup.ThreadID, NS: tup.NS, ID: tup.ID, ParentID: tup.ParentID, Source: "loop"}
	n.Step, _ = tup.Metadata["step"].(int64)
	for _, w := range tup.Writes {
		n.HasError = n.HasError || w.Channel == saver.ChannelError
		n.HasInterrupt = n.HasInterrupt || w.Channel == saver.ChannelInterrupt
	}
	return n
}

var expiryCheckpointTests = []expiryTest{
	{"VisibleUntilExpiry", testExpiryVisibleUntil},
	{"NeverExpires", testExpiryNever},
	{"LatestFallsBack", testExpiryLatestFallsBack},
	{"List", testExpiryList},
	{"Nodes", testExpiryNodes},
	{"Upsert", testExpiryUpsert},
	{"Isolated", testExpiryIsolated},
}

// testExpiryVisibleUntil puts a checkpoint with a value and writes that
// expire with it: all of it reads back until the second it expires, and
// nothing from that second on.
func testExpiryVisibleUntil(t *testing.T, s ExpiryStore, clock *Clock) {
	t0 := clock.Now()
	ref := NewRef()
	in := Expiring(NewCheckpoint(ref, "0001"), t0.Add(time.Hour).Unix())
	SetChannel(&in, "a", "1", "a")
	MustPutCheckpoint(t, s, in)
	writes := []saver.Write{NewWrite("task", 0, "ch", "w"), errorWrite("task", "boom")}
	MustPutExpiringWrites(t, s, in.CheckpointRef, in.ExpiresAt, writes...)
	want := WantTuple(in, writes...)
	for _, d := range []time.Duration{0, time.Hour - time.Second} {
		advanceTo(clock, t0.Add(d))
		mustShow(t, s, ref, want)
		MustEqualTuple(t, MustGetTuple(t, s, ref), want)
		MustEqualTuples(t, MustList(t, s, saver.ListFilter{Tenant: ref.Tenant}), []*saver.Tuple{want})
	}
	clock.Advance(time.Second)
	MustNotFind(t, s, in.CheckpointRef)
	mustBeEmpty(t, s, ref)
	if got := MustList(t, s, saver.ListFilter{Tenant: ref.Tenant}); len(got) != 0 {
		t.Fatalf("tenant lists %v after expiry", Positions(got))
	}
}

// testExpiryNever puts a checkpoint and writes with ExpiresAt 0: they are
// still there a century later.
func testExpiryNever(t *testing.T, s ExpiryStore, clock *Clock) {
	ref := NewRef()
	in := Expiring(NewCheckpoint(ref, "0001"), 0)
	SetChannel(&in, "a", "1", "a")
	MustPutCheckpoint(t, s, in)
	writes := []saver.Write{NewWrite("task", 0, "ch", "w"), interruptWrite("task", "pause")}
	MustPutExpiringWrites(t, s, in.CheckpointRef, 0, writes...)
	clock.Advance(forever)
	mustShow(t, s, ref, WantTuple(in, writes...))
}

// testExpiryLatestFallsBack lets the newest checkpoints expire first: the
// latest is the newest one still live, and none once all have expired.
func testExpiryLatestFallsBack(t *testing.T, s ExpiryStore, clock *Clock) {
	t0 := clock.Now()
	ref := NewRef()
	puts := []saver.PutCheckpoint{
		Expiring(NewCheckpoint(ref, "0001"), t0.Add(3*time.Hour).Unix()),
		Expiring(NewCheckpoint(ref, "0002"), t0.Add(2*time.Hour).Unix()),
		Expiring(NewCheckpoint(ref, "0003"), t0.Add(time.Hour).Unix()),
	}
	for i := range puts {
		puts[i].Metadata["step"] = int64(i)
		if i > 0 {
			puts[i].ParentID = puts[i-1].ID
		}
		MustPutCheckpoint(t, s, puts[i])
	}
	for live := len(puts); live > 0; live-- {
		advanceTo(clock, t0.Add(time.Duration(len(puts)-live)*time.Hour))
		var want []*saver.Tuple
		for i := live - 1; i >= 0; i-- {
			want = append(want, WantTuple(puts[i]))
		}
		MustEqualTuple(t, MustGetTuple(t, s, ref), want[0])
		mustShow(t, s, ref, want...)
		for _, gone := range puts[live:] {
			MustNotFind(t, s, gone.CheckpointRef)
		}
	}
	advanceTo(clock, t0.Add(3*time.Hour))
	mustBeEmpty(t, s, ref)
}

// testExpiryList lists a tenant whose threads and namespaces mix live and
// expired checkpoints: expired ones are left out before the limit counts
// and whatever the filter.
func testExpiryList(t *testing.T, s ExpiryStore, clock *Clock) {
	t0 := clock.Now()
	soon := t0.Add(time.Hour).Unix()
	a := NewRef()
	b := a
	b.ThreadID += "-b"
	for _, p := range []struct {
		ref saver.CheckpointRef
		id  string
		exp int64
	}{
		{a, "0001", 0},
		{a, "0002", soon},
		{a, "0004", soon},
		{InNS(a, "child:1"), "0003", 0},
		{b, "0002", 0},
		{b, "0005", soon},
	} {
		MustPutCheckpoint(t, s, Expiring(NewCheckpoint(p.ref, p.id), p.exp))
	}
	clock.Advance(time.Hour)
	all := []saver.ListPosition{pos(a.ThreadID, "child:1", "0003"), pos(b.ThreadID, "", "0002"), pos(a.ThreadID, "", "0001")}
	tests := []struct {
		name string
		f    saver.ListFilter
		want []saver.ListPosition
	}{
		{"Tenant", saver.ListFilter{}, all},
		{"Limit1", saver.ListFilter{Limit: 1}, all[:1]},
		{"Limit2", saver.ListFilter{Limit: 2}, all[:2]},
		{"Thread", saver.ListFilter{ThreadID: a.ThreadID}, []saver.ListPosition{all[0], all[2]}},
		{"NSLimit", saver.ListFilter{ThreadID: a.ThreadID, NS: ptr(""), Limit: 1}, all[2:]},
		{"Before", saver.ListFilter{ThreadID: b.ThreadID, Before: "0005"}, all[1:2]},
		{"ID", saver.ListFilter{CheckpointID: "0002"}, all[1:2]},
		{"After", saver.ListFilter{After: &all[0], Limit: 1}, all[1:2]},
		{"Metadata", saver.ListFilter{Metadata: saver.Metadata{"source": "loop"}}, all},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.f.Tenant = a.Tenant
			if diff := cmp.Diff(tt.want, Positions(MustList(t, s, tt.f))); diff != "" {
				t.Fatalf("listing mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// testExpiryNodes checks the tree of a run whose middle checkpoint expires:
// its node goes, its child keeps the parent link, and flags come only from
// writes that have not expired.
func testExpiryNodes(t *testing.T, s ExpiryStore, clock *Clock) {
	t0 := clock.Now()
	soon := t0.Add(time.Hour).Unix()
	ref := NewRef()
	first := Expiring(NewCheckpoint(ref, "0001"), 0)
	middle := Expiring(NewCheckpoint(ref, "0002"), soon)
	middle.ParentID = first.ID
	last := Expiring(NewCheckpoint(ref, "0003"), 0)
	last.ParentID = middle.ID
	for _, in := range []saver.PutCheckpoint{first, middle, last} {
		MustPutCheckpoint(t, s, in)
	}
	MustPutExpiringWrites(t, s, first.CheckpointRef, soon, errorWrite("task", "boom"))
	MustPutExpiringWrites(t, s, middle.CheckpointRef, 0, interruptWrite("task", "pause"))
	MustPutExpiringWrites(t, s, last.CheckpointRef, 0, interruptWrite("task", "pause"))
	node := func(in saver.PutCheckpoint, hasError, hasInterrupt bool) saver.Node {
		n := NodeOf(in)
		n.Source, n.HasError, n.HasInterrupt = "loop", hasError, hasInterrupt
		return n
	}
	MustEqualNodes(t, s, ref.Tenant, ref.ThreadID, []saver.Node{
		node(first, true, false), node(middle, false, true), node(last, false, true),
	})
	clock.Advance(time.Hour)
	MustEqualNodes(t, s, ref.Tenant, ref.ThreadID, []saver.Node{
		node(first, false, false), node(last, false, true),
	})
}

// testExpiryUpsert puts a checkpoint again with other expiries: each put
// replaces the expiry, later or earlier, and a put after expiry brings the
// checkpoint back. A put without blobs still keeps the values it
// references for as long as it lives.
func testExpiryUpsert(t *testing.T, s ExpiryStore, clock *Clock) {
	t0 := clock.Now()
	ref := NewRef()
	in := Expiring(NewCheckpoint(ref, "0001"), t0.Add(time.Hour).Unix())
	SetChannel(&in, "a", "1", "a")
	MustPutCheckpoint(t, s, in)
	want := func(put saver.PutCheckpoint) *saver.Tuple {
		tup := WantTuple(in)
		tup.Checkpoint = put.Checkpoint
		return tup
	}

	later := Expiring(stripped(in), t0.Add(2*time.Hour).Unix())
	MustPutCheckpoint(t, s, later)
	clock.Advance(time.Hour)
	mustShow(t, s, ref, want(later))

	earlier := Expiring(stripped(in), t0.Add(90*time.Minute).Unix())
	MustPutCheckpoint(t, s, earlier)
	mustShow(t, s, ref, want(earlier))
	advanceTo(clock, t0.Add(90*time.Minute))
	mustBeEmpty(t, s, ref)

	back := Expiring(stripped(in), 0)
	MustPutCheckpoint(t, s, back)
	mustShow(t, s, ref, want(back))
	clock.Advance(forever)
	mustShow(t, s, ref, want(back))
}

// testExpiryIsolated puts the same checkpoint id in another tenant, in
// neighbouring threads and in another namespace, with other expiries: each
// expires on its own.
func testExpiryIsolated(t *testing.T, s ExpiryStore, clock *Clock) {
	soon := clock.Now().Add(time.Hour).Unix()
	ref := NewRef()
	other := ref
	other.Tenant = NewTenant()
	refs := append([]saver.CheckpointRef{ref, other, InNS(ref, "child:1")}, neighbours(ref)...)
	var keep []saver.PutCheckpoint
	for i, r := range refs {
		exp := soon
		if i%2 == 1 {
			exp = 0
		}
		in := Expiring(NewCheckpoint(r, "0001"), exp)
		MustPutCheckpoint(t, s, in)
		MustPutExpiringWrites(t, s, in.CheckpointRef, exp, NewWrite("task", 0, "ch", "w"))
		if exp == 0 {
			keep = append(keep, in)
		}
	}
	clock.Advance(time.Hour)
	for i, r := range refs {
		if i%2 == 0 {
			MustNotFind(t, s, At(r, "0001"))
		}
	}
	for _, in := range keep {
		MustEqualTuple(t, MustGetTuple(t, s, in.CheckpointRef), WantTuple(in, NewWrite("task", 0, "ch", "w")))
	}
}
