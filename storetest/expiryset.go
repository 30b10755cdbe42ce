package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/saver-dev/saver"
)

var setExpiryTests = []expiryTest{
	{"Extends", testSetExpiryExtends},
	{"Pin", testSetExpiryPin},
	{"NotFound", testSetExpiryNotFound},
	{"NeverShortens", testSetExpiryNeverShortens},
	{"Isolated", testSetExpiryIsolated},
	{"NeedsID", testSetExpiryNeedsID},
}

// testSetExpiryExtends extends a checkpoint that references a blob of its
// parent: the checkpoint, that blob, its own blob and its writes all outlive
// the expiry they were put with.
func testSetExpiryExtends(t *testing.T, s ExpiryStore, clock *Clock) {
	t0 := clock.Now()
	ref := NewRef()
	first, second := putPair(t, s, ref, t0.Add(time.Hour).Unix(), t0.Add(time.Hour).Unix())
	MustSetExpiry(t, s, second.CheckpointRef, t0.Add(5*time.Hour).Unix())
	second.ExpiresAt = t0.Add(5 * time.Hour).Unix()
	mustShow(t, s, ref, second, first)
	advanceTo(clock, t0.Add(time.Hour))
	MustNotFind(t, s, first.CheckpointRef)
	mustShow(t, s, ref, second)
	advanceTo(clock, t0.Add(5*time.Hour-time.Second))
	mustShow(t, s, ref, second)
	clock.Advance(time.Second)
	mustBeEmpty(t, s, ref)
}

// testSetExpiryPin pins a checkpoint: it, the blobs it references and its
// writes never expire, whatever its scope; its parent expires as put.
func testSetExpiryPin(t *testing.T, s ExpiryStore, clock *Clock) {
	ref := NewRef()
	soon := clock.Now().Add(time.Hour).Unix()
	first, second := putPair(t, s, ref, soon, soon)
	MustSetExpiry(t, s, second.CheckpointRef, 0)
	second.ExpiresAt = 0
	mustShow(t, s, ref, second, first)
	clock.Advance(forever)
	MustNotFind(t, s, first.CheckpointRef)
	mustShow(t, s, ref, second)
}

// testSetExpiryNotFound sets the expiry of checkpoints that do not exist,
// exist elsewhere, hold only writes or have expired: ENOTFOUND, and nothing
// appears or comes back.
func testSetExpiryNotFound(t *testing.T, s ExpiryStore, clock *Clock) {
	ref := NewRef()
	in := Expiring(NewCheckpoint(ref, "0001"), clock.Now().Add(time.Hour).Unix())
	MustPutCheckpoint(t, s, in)
	MustPutExpiringWrites(t, s, At(ref, "0009"), 0, NewWrite("task", 0, "ch", "orphan"))
	other := in.CheckpointRef
	other.Tenant = NewTenant()
	for _, r := range []saver.CheckpointRef{
		At(ref, "0002"),
		At(ref, "0009"),
		At(InNS(ref, "child:1"), "0001"),
		At(neighbours(ref)[0], "0001"),
		other,
	} {
		MustErrorCode(t, fmt.Sprintf("SetExpiry(%+v)", r), s.SetExpiry(t.Context(), r, 0), saver.ENOTFOUND)
		MustNotFind(t, s, r)
	}
	clock.Advance(time.Hour)
	MustErrorCode(t, "SetExpiry(expired)", s.SetExpiry(t.Context(), in.CheckpointRef, 0), saver.ENOTFOUND)
	MustNotFind(t, s, in.CheckpointRef)
	mustBeEmpty(t, s, ref)
}

// testSetExpiryNeverShortens moves expiries below what blobs and writes
// already have: a blob shared with a longer-lived checkpoint, and the blob
// and writes of a checkpoint whose own expiry is brought forward, keep
// theirs. Putting the checkpoint again shows them.
func testSetExpiryNeverShortens(t *testing.T, s ExpiryStore, clock *Clock) {
	t0 := clock.Now()
	ref := NewRef()
	long := Expiring(NewCheckpoint(ref, "0001"), t0.Add(10*time.Hour).Unix())
	SetChannel(&long, "a", "1", "a")
	MustPutCheckpoint(t, s, long)
	writes := []saver.Write{NewWrite("task", 0, "ch", "w")}
	MustPutExpiringWrites(t, s, long.CheckpointRef, long.ExpiresAt, writes...)
	short := Expiring(NewCheckpoint(ref, "0002"), t0.Add(time.Hour).Unix())
	short.ParentID = long.ID
	short.ChannelVersions["a"] = "1"
	SetChannel(&short, "b", "1", "b")
	MustPutCheckpoint(t, s, short)

	MustSetExpiry(t, s, short.CheckpointRef, t0.Add(2*time.Hour).Unix())
	MustSetExpiry(t, s, long.CheckpointRef, t0.Add(time.Hour).Unix())
	short.ExpiresAt = t0.Add(2 * time.Hour).Unix()
	clock.Advance(time.Hour)
	MustNotFind(t, s, long.CheckpointRef)
	mustShow(t, s, ref, resolved(short, []saver.Blob{blob("a", "1", "a"), blob("b", "1", "b")}))

	clock.Advance(time.Hour)
	mustBeEmpty(t, s, ref)
	back := Expiring(stripped(long), 0)
	MustPutCheckpoint(t, s, back)
	mustShow(t, s, ref, resolved(back, long.Blobs, writes...))
	advanceTo(clock, t0.Add(10*time.Hour))
	mustShow(t, s, ref, resolved(back, long.Blobs))
}

// testSetExpiryIsolated pins a checkpoint whose id is also in another
// tenant, in neighbouring threads and in another namespace: only it stays.
func testSetExpiryIsolated(t *testing.T, s ExpiryStore, clock *Clock) {
	soon := clock.Now().Add(time.Hour).Unix()
	ref := NewRef()
	other := ref
	other.Tenant = NewTenant()
	refs := append([]saver.CheckpointRef{ref, other, InNS(ref, "child:1")}, neighbours(ref)...)
	for _, r := range refs {
		in := Expiring(NewCheckpoint(r, "0001"), soon)
		SetChannel(&in, "a", "1", "a")
		MustPutCheckpoint(t, s, in)
		MustPutExpiringWrites(t, s, in.CheckpointRef, soon, NewWrite("task", 0, "ch", "w"))
	}
	MustSetExpiry(t, s, At(ref, "0001"), 0)
	clock.Advance(time.Hour)
	pinned := Expiring(NewCheckpoint(ref, "0001"), 0)
	pinned.Scope = saver.ScopeSession
	SetChannel(&pinned, "a", "1", "a")
	mustShow(t, s, ref, WantTuple(pinned, NewWrite("task", 0, "ch", "w")))
	for _, r := range refs[1:] {
		MustNotFind(t, s, At(r, "0001"))
	}
}

// testSetExpiryNeedsID pins with no checkpoint id: it is refused, and
// neither the latest checkpoint nor any other is pinned.
func testSetExpiryNeedsID(t *testing.T, s ExpiryStore, clock *Clock) {
	soon := clock.Now().Add(time.Hour).Unix()
	ref := NewRef()
	for _, id := range []string{"0001", "0002"} {
		in := Expiring(NewCheckpoint(ref, id), soon)
		SetChannel(&in, "a", id, "a of "+id)
		MustPutCheckpoint(t, s, in)
		MustPutExpiringWrites(t, s, in.CheckpointRef, soon, NewWrite("task", 0, "ch", "w"))
	}
	MustErrorCode(t, "SetExpiry(no id)", s.SetExpiry(t.Context(), ref, 0), saver.EINVALID)
	MustErrorCode(t, "SetExpiry(no id, no checkpoint)", s.SetExpiry(t.Context(), InNS(ref, "child:1"), 0), saver.EINVALID)
	if got := MustGetTuple(t, s, ref); got.ID != "0002" || got.ExpiresAt != soon {
		t.Fatalf("latest = %s expiring at %d, want 0002 expiring at %d", got.ID, got.ExpiresAt, soon)
	}
	clock.Advance(time.Hour)
	mustBeEmpty(t, s, ref)
}
