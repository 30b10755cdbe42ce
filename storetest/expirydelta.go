package storetest

import (
	"time"

	"testing"

	"github.com/saver-dev/saver"
)

var expiryDeltaTests = []expiryTest{
	{"ExpiredAncestorEndsTheWalk", testExpiryDeltaAncestor},
	{"ExpiredWrites", testExpiryDeltaWrites},
	{"ExpiredTarget", testExpiryDeltaTarget},
}

// putExpiringDelta puts checkpoint id with parent, its DeltaChannel
// "messages" at version id with value (empty for ""), expiring at exp.
func putExpiringDelta(t *testing.T, s saver.Store, ref saver.CheckpointRef, id, parent, value string, exp int64) {
	t.Helper()
	in := Expiring(NewCheckpoint(ref, id), exp)
	in.ParentID = parent
	in.ChannelVersions["messages"] = id
	v := saver.Typed{Type: saver.EmptyType, Data: []byte{}}
	if value != "" {
		v = Typed(value)
	} else {
		in.Metadata[saver.DeltaCountersKey] = map[string]any{"messages": []any{int64(1), int64(1)}}
	}
	in.Blobs = []saver.Blob{{Channel: "messages", Version: id, Value: v}}
	MustPutCheckpoint(t, s, in)
}

// testExpiryDeltaAncestor ends the walk at an expired ancestor, as a
// get_tuple of it would: its seed and writes are gone with it.
func testExpiryDeltaAncestor(t *testing.T, s ExpiryStore, clock *Clock) {
	ref := NewRef()
	t0 := clock.Now()
	putExpiringDelta(t, s, ref, "0001", "", "S1", t0.Add(time.Hour).Unix())
	MustPutExpiringWrites(t, s, At(ref, "0001"), t0.Add(time.Hour).Unix(), DeltaWrite("task", "messages", "m1"))
	putExpiringDelta(t, s, ref, "0002", "0001", "", t0.Add(3*time.Hour).Unix())
	MustPutExpiringWrites(t, s, At(ref, "0002"), t0.Add(3*time.Hour).Unix(), DeltaWrite("task", "messages", "m2"))
	putExpiringDelta(t, s, ref, "0003", "0002", "", t0.Add(3*time.Hour).Unix())
	MustEqualHistory(t, s, At(ref, "0003"), map[string]History{"messages": seeded("S1", "task/0/messages=m1", "task/0/messages=m2")})
	advanceTo(clock, t0.Add(2*time.Hour))
	MustEqualHistory(t, s, At(ref, "0003"), map[string]History{"messages": unseeded("task/0/messages=m2")})
	MustEqualHistory(t, s, ref, map[string]History{"messages": unseeded("task/0/messages=m2")})
}

// testExpiryDeltaWrites leaves expired writes out of the history.
func testExpiryDeltaWrites(t *testing.T, s ExpiryStore, clock *Clock) {
	ref := NewRef()
	t0 := clock.Now()
	putExpiringDelta(t, s, ref, "0001", "", "S1", 0)
	MustPutExpiringWrites(t, s, At(ref, "0001"), t0.Add(time.Hour).Unix(), DeltaWrite("soon", "messages", "gone"))
	MustPutExpiringWrites(t, s, At(ref, "0001"), 0, DeltaWrite("kept", "messages", "stays"))
	putExpiringDelta(t, s, ref, "0002", "0001", "", 0)
	advanceTo(clock, t0.Add(2*time.Hour))
	MustEqualHistory(t, s, At(ref, "0002"), map[string]History{"messages": seeded("S1", "kept/0/messages=stays")})
}

// testExpiryDeltaTarget answers an expired target with empty histories,
// as an unknown one, and the latest by the newest live checkpoint.
func testExpiryDeltaTarget(t *testing.T, s ExpiryStore, clock *Clock) {
	ref := NewRef()
	t0 := clock.Now()
	putExpiringDelta(t, s, ref, "0001", "", "S1", 0)
	MustPutExpiringWrites(t, s, At(ref, "0001"), 0, DeltaWrite("task", "messages", "m1"))
	putExpiringDelta(t, s, ref, "0002", "0001", "", 0)
	MustPutExpiringWrites(t, s, At(ref, "0002"), 0, DeltaWrite("task", "messages", "m2"))
	putExpiringDelta(t, s, ref, "0003", "0002", "", t0.Add(time.Hour).Unix())
	advanceTo(clock, t0.Add(2*time.Hour))
	MustEqualHistory(t, s, At(ref, "0003"), map[string]History{"messages": unseeded()})
	MustEqualHistory(t, s, ref, map[string]History{"messages": seeded("S1", "task/0/messages=m1")})
}
