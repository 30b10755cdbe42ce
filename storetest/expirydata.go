package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/saver-dev/saver"
)

// blob returns the blob of channel at version holding value.
func blob(channel, version, value string) saver.Blob {
	return saver.Blob{Channel: channel, Version: version, Value: Typed(value)}
}

// resolved returns the tuple of in, with writes, whose values are blobs: what
// a store resolves through in's channel versions, whichever put wrote them.
func resolved(in saver.PutCheckpoint, blobs []saver.Blob, writes ...saver.Write) *saver.Tuple {
	in.Blobs = blobs
	return WantTuple(in, writes...)
}

// putPair puts two checkpoints in ref's namespace: 0001, which writes a@1
// and expires at exp1, and its child 0002, which references a@1 unchanged,
// writes b@2 and expires at exp2. Each gets an ordinary and an error write
// expiring with it. It returns both as they read back while live.
func putPair(t *testing.T, s saver.Store, ref saver.CheckpointRef, exp1, exp2 int64) (first, second *saver.Tuple) {
	t.Helper()
	in1 := Expiring(NewCheckpoint(ref, "0001"), exp1)
	SetChannel(&in1, "a", "1", "a")
	in2 := Expiring(NewCheckpoint(ref, "0002"), exp2)
	in2.ParentID = in1.ID
	in2.Metadata["step"] = int64(1)
	in2.ChannelVersions["a"] = "1"
	SetChannel(&in2, "b", "2", "b")
	a, b := blob("a", "1", "a"), blob("b", "2", "b")
	var out []*saver.Tuple
	for _, p := range []struct {
		in     saver.PutCheckpoint
		values []saver.Blob
	}{{in1, []saver.Blob{a}}, {in2, []saver.Blob{a, b}}} {
		MustPutCheckpoint(t, s, p.in)
		writes := []saver.Write{NewWrite("task", 0, "ch", "on "+p.in.ID), errorWrite("task", "boom")}
		MustPutExpiringWrites(t, s, p.in.CheckpointRef, p.in.ExpiresAt, writes...)
		out = append(out, resolved(p.in, p.values, writes...))
	}
	return out[0], out[1]
}

var expiryWriteTests = []expiryTest{
	{"OwnExpiry", testExpiryWritesOwn},
	{"PutAgain", testExpiryWritesPutAgain},
}

// testExpiryWritesOwn stores writes with their own expiries on a checkpoint
// that never expires: each leaves the tuple, and its flag the node, when it
// expires.
func testExpiryWritesOwn(t *testing.T, s ExpiryStore, clock *Clock) {
	t0 := clock.Now()
	ref := NewRef()
	in := Expiring(NewCheckpoint(ref, "0001"), 0)
	MustPutCheckpoint(t, s, in)
	hour := []saver.Write{NewWrite("a", 0, "ch", "a"), errorWrite("a", "boom")}
	never := []saver.Write{NewWrite("b", 0, "ch", "b")}
	twoHours := []saver.Write{interruptWrite("c", "pause")}
	MustPutExpiringWrites(t, s, in.CheckpointRef, t0.Add(time.Hour).Unix(), hour...)
	MustPutExpiringWrites(t, s, in.CheckpointRef, 0, never...)
	MustPutExpiringWrites(t, s, in.CheckpointRef, t0.Add(2*time.Hour).Unix(), twoHours...)
	mustShow(t, s, ref, WantTuple(in, slices.Concat(hour, never, twoHours)...))
	advanceTo(clock, t0.Add(time.Hour))
	mustShow(t, s, ref, WantTuple(in, slices.Concat(never, twoHours)...))
	advanceTo(clock, t0.Add(2*time.Hour))
	mustShow(t, s, ref, WantTuple(in, never...))
}

// testExpiryWritesPutAgain puts writes again: an ordinary write that is
// still stored keeps its value and expiry, a special write is replaced with
// its expiry, and an expired write is absent, so that it is stored anew.
func testExpiryWritesPutAgain(t *testing.T, s ExpiryStore, clock *Clock) {
	soon := clock.Now().Add(time.Hour).Unix()
	ref := NewRef()
	in := Expiring(NewCheckpoint(ref, "0001"), 0)
	MustPutCheckpoint(t, s, in)
	kept := NewWrite("kept", 0, "ch", "first")
	MustPutExpiringWrites(t, s, in.CheckpointRef, 0, kept)
	MustPutExpiringWrites(t, s, in.CheckpointRef, soon, NewWrite("kept", 0, "ch", "second"))
	MustPutExpiringWrites(t, s, in.CheckpointRef, soon, errorWrite("special", "first"))
	special := errorWrite("special", "second")
	MustPutExpiringWrites(t, s, in.CheckpointRef, 0, special)
	MustPutExpiringWrites(t, s, in.CheckpointRef, soon, NewWrite("expired", 0, "ch", "first"))
	clock.Advance(time.Hour)
	mustShow(t, s, ref, WantTuple(in, kept, special))
	again := NewWrite("expired", 0, "ch", "second")
	MustPutExpiringWrites(t, s, in.CheckpointRef, 0, again)
	mustShow(t, s, ref, WantTuple(in, kept, special, again))
}

var expiryBlobTests = []expiryTest{
	{"OutliveTheirWriter", testExpiryBlobsOutlive},
	{"PinnedCheckpoint", testExpiryBlobsPinned},
	{"PutAgain", testExpiryBlobsPutAgain},
}

// testExpiryBlobsOutlive follows a thread whose checkpoints each outlive
// the previous one and reference its blobs unchanged: a blob resolves for
// as long as the last checkpoint referencing it lives, not the one that
// wrote it.
func testExpiryBlobsOutlive(t *testing.T, s ExpiryStore, clock *Clock) {
	t0 := clock.Now()
	ref := NewRef()
	first := Expiring(NewCheckpoint(ref, "0001"), t0.Add(time.Hour).Unix())
	SetChannel(&first, "a", "1", "a1")
	SetChannel(&first, "b", "1", "b1")
	MustPutCheckpoint(t, s, first)
	clock.Advance(30 * time.Minute)
	second := Expiring(NewCheckpoint(ref, "0002"), t0.Add(3*time.Hour).Unix())
	second.ParentID = first.ID
	second.ChannelVersions["a"] = "1"
	SetChannel(&second, "b", "2", "b2")
	MustPutCheckpoint(t, s, second)
	want2 := resolved(second, []saver.Blob{blob("a", "1", "a1"), blob("b", "2", "b2")})
	mustShow(t, s, ref, want2, WantTuple(first))

	advanceTo(clock, t0.Add(time.Hour))
	MustNotFind(t, s, first.CheckpointRef)
	mustShow(t, s, ref, want2)

	advanceTo(clock, t0.Add(2*time.Hour))
	third := Expiring(NewCheckpoint(ref, "0003"), t0.Add(5*time.Hour).Unix())
	third.ParentID = second.ID
	third.ChannelVersions["a"], third.ChannelVersions["b"] = "1", "2"
	MustPutCheckpoint(t, s, third)
	want3 := resolved(third, want2.Values)
	advanceTo(clock, t0.Add(3*time.Hour-time.Second))
	mustShow(t, s, ref, want3, want2)
	clock.Advance(time.Second)
	mustShow(t, s, ref, want3)
	advanceTo(clock, t0.Add(5*time.Hour-time.Second))
	mustShow(t, s, ref, want3)
	clock.Advance(time.Second)
	mustBeEmpty(t, s, ref)
}

// testExpiryBlobsPinned references an expiring checkpoint's blob from one
// that never expires: the blob never expires either.
func testExpiryBlobsPinned(t *testing.T, s ExpiryStore, clock *Clock) {
	ref := NewRef()
	first := Expiring(NewCheckpoint(ref, "0001"), clock.Now().Add(time.Hour).Unix())
	SetChannel(&first, "a", "1", "a")
	MustPutCheckpoint(t, s, first)
	second := Expiring(NewCheckpoint(ref, "0002"), 0)
	second.ChannelVersions["a"] = "1"
	SetChannel(&second, "b", "1", "b")
	MustPutCheckpoint(t, s, second)
	clock.Advance(forever)
	mustShow(t, s, ref, resolved(second, []saver.Blob{blob("a", "1", "a"), blob("b", "1", "b")}))
}

// testExpiryBlobsPutAgain puts a blob again once it has expired: it is
// absent, so the new checkpoint stores it.
func testExpiryBlobsPutAgain(t *testing.T, s ExpiryStore, clock *Clock) {
	ref := NewRef()
	first := Expiring(NewCheckpoint(ref, "0001"), clock.Now().Add(time.Hour).Unix())
	SetChannel(&first, "a", "1", "a")
	MustPutCheckpoint(t, s, first)
	clock.Advance(time.Hour)
	second := Expiring(NewCheckpoint(ref, "0002"), 0)
	SetChannel(&second, "a", "1", "a")
	MustPutCheckpoint(t, s, second)
	mustShow(t, s, ref, WantTuple(second))
	clock.Advance(forever)
	mustShow(t, s, ref, WantTuple(second))
}
