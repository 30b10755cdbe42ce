//go:build integration

package dynamo_test

import (
	"fmt"
	"testing"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/dynamo"
	"github.com/saver-dev/saver/localstack"
	"github.com/saver-dev/saver/storetest"
)

// TestListThreadMergesNamespaces: a limited list of a thread in all its
// namespaces reads each namespace's newest checkpoints, not the thread: one
// Query per namespace to find it (and one to find there is no other), one
// per namespace to list it; a thread with more namespaces than the merge
// takes is read whole. Either way the result is the full listing's head.
func TestListThreadMergesNamespaces(t *testing.T) {
	st := localstack.MustStore(t)
	s := st.Store
	grow := func(ref saver.CheckpointRef, nss []string, n int) {
		for i := 1; i <= n; i++ {
			in := storetest.NewCheckpoint(storetest.InNS(ref, nss[i%len(nss)]), fmt.Sprintf("%04d", i))
			storetest.SetChannel(&in, "ch", fmt.Sprint(i), "v")
			storetest.MustPutCheckpoint(t, s, in)
			if i%5 == 0 {
				storetest.MustPutWrites(t, s, in.CheckpointRef, storetest.NewWrite("t", 0, "ch", "w"))
			}
		}
	}
	tests := []struct {
		name   string
		nss    int
		filter saver.ListFilter
		want   requests
	}{
		{"3Namespaces", 3, saver.ListFilter{Limit: 7}, requests{"Query": 4 + 3, "BatchGetItem": 1}},
		{"3NamespacesBefore", 3, saver.ListFilter{Limit: 4, Before: "0040"}, requests{"Query": 4 + 3, "BatchGetItem": 1}},
		{"3NamespacesFiltered", 3, saver.ListFilter{Limit: 2, Metadata: saver.Metadata{"source": "loop"}}, requests{"Query": 4 + 3, "BatchGetItem": 1}},
		// 40 namespaces: 33 Queries find more than 32, then one reads the thread.
		{"40Namespaces", 40, saver.ListFilter{Limit: 3}, requests{"Query": 33 + 1, "BatchGetItem": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := storetest.NewRef()
			var nss []string
			for i := range tt.nss {
				nss = append(nss, map[bool]string{true: "", false: fmt.Sprintf("child:%d", i)}[i == 0])
			}
			grow(ref, nss, 80)
			f := tt.filter
			f.Tenant, f.ThreadID = ref.Tenant, ref.ThreadID
			all := f
			all.Limit = 0
			want := storetest.MustList(t, s, all)
			want = want[:min(len(want), f.Limit)]
			// Read by another replica, which remembers none of the
			// values and takes them from the table.
			cold := dynamo.NewStore(st.DB, s.Table())
			var got []*saver.Tuple
			mustCount(t, st, tt.want, func() { got = storetest.MustList(t, cold, f) })
			storetest.MustEqualTuples(t, got, want)
		})
	}
}
