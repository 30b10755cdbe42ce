//go:build integration

package dynamo_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/dynamo"
	"github.com/saver-dev/saver/localstack"
	"github.com/saver-dev/saver/storetest"
)

// TestMeasureWriteCosts pins the requests and write units of the puts and
// put_writes a graph makes, which the tombstone checks (tombstone.go) make
// transactions, with the tree index items (treeindex.go): a checkpoint of 2 KB without blobs, with and without a
// parent, the same bringing a blob of 1 KB, and put_writes of one write,
// and of one with a write to a special channel.
func TestMeasureWriteCosts(t *testing.T) {
	st := localstack.MustStore(t)
	rec := &capacityRecorder{DynamoAPI: st.DB}
	s := dynamo.NewStore(rec, st.Store.Table())
	ref := storetest.NewRef()
	// Each write is one TransactWriteItems, of the units pinned: a change
	// in either is a change in what every put or put_writes costs.
	measure := func(name string, units float64, fn func()) {
		st.DBRequests.Reset()
		rec.units = 0
		fn()
		t.Logf("%-38s %v  %.0f write units", name, st.DBRequests.Snapshot(), rec.units)
		if got := st.DBRequests.Snapshot()["TransactWriteItems"]; got != 1 || st.DBRequests.Total() != 1 || rec.units != units {
			t.Errorf("%s: sent %v for %.0f write units, want one TransactWriteItems for %.0f", name, st.DBRequests.Snapshot(), rec.units, units)
		}
	}
	body := saver.Typed{Type: "msgpack", Data: []byte(strings.Repeat("b", 2<<10))}
	for i, tc := range []struct {
		name   string
		parent bool
		blob   bool
		units  float64
	}{
		{"put, no blob, no parent", false, false, 10},
		{"put, no blob, a parent", true, false, 12},
		{"put, 1 new blob, a parent", true, true, 18},
	} {
		in := storetest.NewCheckpoint(ref, fmt.Sprintf("%04d", i+1))
		in.Body = body
		if tc.parent {
			in.ParentID = fmt.Sprintf("%04d", i)
		}
		if tc.blob {
			storetest.SetChannel(&in, "new", fmt.Sprint(i), strings.Repeat("n", 1<<10))
		}
		measure(tc.name, tc.units, func() { storetest.MustPutCheckpoint(t, s, in) })
	}
	measure("put_writes, 1 write", 4, func() {
		storetest.MustPutWrites(t, s, storetest.At(ref, "0003"), storetest.NewWrite("t", 0, "ch", "w"))
	})
	measure("put_writes, 1 write and an error", 8, func() {
		storetest.MustPutWrites(t, s, storetest.At(ref, "0003"), storetest.NewWrite("u", 0, "ch", "w"), storetest.NewWrite("u", -1, "__error__", "boom"))
	})
}
