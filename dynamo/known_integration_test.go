//go:build integration

package dynamo_test

import (
	"testing"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/dynamo"
	"github.com/saver-dev/saver/localstack"
	"github.com/saver-dev/saver/storetest"
)

// TestValuesFromMemory: a replica reads back the values it just put, and
// those it referenced, from memory (the Query alone); an empty value too.
// When another replica deleted the thread and put the same versions with
// other bytes, the first replica's reads and puts notice (the hashes in
// the checkpoint and lifetimes items differ from the ones it remembers)
// and take the table's values: one request more on the put, once.
func TestValuesFromMemory(t *testing.T) {
	st := localstack.MustStore(t)
	a := st.Store
	b := dynamo.NewStore(st.DB, a.Table())
	ref := storetest.NewRef()
	put := func(s *dynamo.Store, id, parent string, refs map[string]string, values ...string) {
		t.Helper()
		in := storetest.NewCheckpoint(ref, id)
		in.ParentID = parent
		for ch, v := range refs {
			in.ChannelVersions[ch] = v
		}
		for i := 0; i < len(values); i += 3 {
			storetest.SetChannel(&in, values[i], values[i+1], values[i+2])
		}
		storetest.MustPutCheckpoint(t, s, in)
	}
	values := func(s *dynamo.Store, ref saver.CheckpointRef) map[string]string {
		t.Helper()
		out := map[string]string{}
		for _, v := range storetest.MustGetTuple(t, s, ref).Values {
			out[v.Channel] = string(v.Value.Data)
		}
		return out
	}
	mustValues := func(got map[string]string, want ...string) {
		t.Helper()
		w := map[string]string{}
		for i := 0; i < len(want); i += 2 {
			w[want[i]] = string(storetest.Typed(want[i+1]).Data)
		}
		if len(got) != len(w) {
			t.Fatalf("values %v, want %v", got, w)
		}
		for ch, v := range w {
			if got[ch] != v {
				t.Fatalf("values %v, want %v", got, w)
			}
		}
	}

	put(a, "0001", "", nil, "messages", "1", "hi", "meta", "1", "m")
	empty := storetest.NewCheckpoint(ref, "0002")
	empty.ParentID = "0001"
	empty.ChannelVersions["meta"] = "1"
	storetest.SetChannel(&empty, "messages", "2", "hi there")
	empty.ChannelVersions["trigger"] = "2"
	empty.Blobs = append(empty.Blobs, saver.Blob{Channel: "trigger", Version: "2", Value: saver.Typed{Type: saver.EmptyType, Data: []byte{}}})
	storetest.MustPutCheckpoint(t, a, empty)
	var warm map[string]string
	mustCount(t, st, requests{"Query": 1}, func() { warm = values(a, ref) })
	mustValues(warm, "messages", "hi there", "meta", "m")
	mustCount(t, st, requests{"Query": 1, "BatchGetItem": 1}, func() { mustValues(values(b, ref), "messages", "hi there", "meta", "m") })

	// b deletes the thread and puts the same versions with other bytes, in
	// checkpoints of new ids (the deleted ids are tombstoned).
	if err := b.DeleteThread(t.Context(), ref.Tenant, ref.ThreadID); err != nil {
		t.Fatal(err)
	}
	put(b, "0011", "", nil, "messages", "1", "bye", "meta", "1", "n")
	mustCount(t, st, requests{"Query": 1, "BatchGetItem": 1}, func() { mustValues(values(a, storetest.At(ref, "0011")), "messages", "bye", "meta", "n") })
	// a still remembers meta@1 as "m", which the lifetimes entry's hash
	// refutes: the put goes again without claiming to know it.
	mustCount(t, st, requests{"TransactWriteItems": 2}, func() {
		put(a, "0012", "0011", map[string]string{"meta": "1"}, "messages", "2", "bye now")
	})
	mustValues(values(a, ref), "messages", "bye now", "meta", "n")
	mustValues(values(b, ref), "messages", "bye now", "meta", "n")
	// Once refuted, a forgets it: the next put is one request again. a
	// knows meta@1 from a read now, which no lifetimes entry of its own
	// vouches for, so the put does not claim it and the read fetches it;
	// the messages a brought come from memory.
	mustCount(t, st, requests{"TransactWriteItems": 1}, func() {
		put(a, "0013", "0012", map[string]string{"meta": "1"}, "messages", "3", "bye for now")
	})
	mustCount(t, st, requests{"Query": 1, "BatchGetItem": 1}, func() { mustValues(values(a, ref), "messages", "bye for now", "meta", "n") })
	// Once a brings meta again, its reads need no table read.
	put(a, "0014", "0013", nil, "messages", "4", "ok", "meta", "4", "o")
	mustCount(t, st, requests{"Query": 1}, func() { mustValues(values(a, ref), "messages", "ok", "meta", "o") })
	mustValues(values(b, ref), "messages", "ok", "meta", "o")
}
