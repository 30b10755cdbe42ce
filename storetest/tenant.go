package storetest

import (
	"testing"

	"github.com/saver-dev/saver"
)

var tenantTests = []test{
	{"Isolated", testTenantsIsolated},
}

// testTenantsIsolated runs every operation in one tenant on a thread id that
// another tenant also uses, and checks that the other tenant's data is
// exactly as it was.
func testTenantsIsolated(t *testing.T, s saver.Store) {
	tests := []struct {
		name string
		// bothHaveData puts the thread in the acting tenant too.
		bothHaveData bool
		op           func(t *testing.T, b saver.CheckpointRef)
	}{
		{"GetTuple", false, func(t *testing.T, b saver.CheckpointRef) {
			MustNotFind(t, s, b)
			MustNotFind(t, s, At(b, "0001"))
			MustNotFind(t, s, InNS(b, "child:1"))
		}},
		{"List", false, func(t *testing.T, b saver.CheckpointRef) {
			for _, f := range []saver.ListFilter{
				{Tenant: b.Tenant, ThreadID: b.ThreadID},
				{Tenant: b.Tenant},
				{Tenant: b.Tenant, CheckpointID: "0001"},
				{Tenant: b.Tenant, Metadata: saver.Metadata{"run_id": "run-0001"}},
			} {
				if got := MustList(t, s, f); len(got) != 0 {
					t.Fatalf("tenant %s lists %v", b.Tenant, Positions(got))
				}
			}
		}},
		{"PutCheckpoint", false, func(t *testing.T, b saver.CheckpointRef) {
			in := NewCheckpoint(b, "0003")
			in.Body = Typed("tenant b")
			SetChannel(&in, "a", "0003", "tenant b")
			SetChannel(&in, "b", "1", "tenant b")
			MustPutCheckpoint(t, s, in)
			MustEqualTuple(t, MustGetTuple(t, s, b), WantTuple(in))
		}},
		{"PutWrites", false, func(t *testing.T, b saver.CheckpointRef) {
			MustPutWrites(t, s, At(b, "0003"), NewWrite("task", 0, "ch", "tenant b"), NewWrite("task", -1, "__error__", "tenant b"))
		}},
		{"DeleteThread", true, func(t *testing.T, b saver.CheckpointRef) {
			if err := s.DeleteThread(t.Context(), b.Tenant, b.ThreadID); err != nil {
				t.Fatalf("DeleteThread: %v", err)
			}
		}},
		{"DeleteForRuns", true, func(t *testing.T, b saver.CheckpointRef) {
			if err := s.DeleteForRuns(t.Context(), b.Tenant, []string{"run-0001", "run-0002", "run-0003"}); err != nil {
				t.Fatalf("DeleteForRuns: %v", err)
			}
		}},
		{"CopyThreadMissing", false, func(t *testing.T, b saver.CheckpointRef) {
			err := s.CopyThread(t.Context(), b.Tenant, b.ThreadID, b.ThreadID+"-copy")
			if got, want := saver.ErrorCode(err), saver.ENOTFOUND; got != want {
				t.Fatalf("CopyThread error code = %q (%v), want %q", got, err, want)
			}
		}},
		{"CopyThread", true, func(t *testing.T, b saver.CheckpointRef) {
			if err := s.CopyThread(t.Context(), b.Tenant, b.ThreadID, b.ThreadID+"-copy"); err != nil {
				t.Fatalf("CopyThread: %v", err)
			}
		}},
		{"PruneKeepLatest", true, func(t *testing.T, b saver.CheckpointRef) {
			if err := s.Prune(t.Context(), b.Tenant, []string{b.ThreadID}, saver.PruneKeepLatest); err != nil {
				t.Fatalf("Prune: %v", err)
			}
		}},
		{"PruneDelete", true, func(t *testing.T, b saver.CheckpointRef) {
			if err := s.Prune(t.Context(), b.Tenant, []string{b.ThreadID, b.ThreadID + "-copy"}, saver.PruneDelete); err != nil {
				t.Fatalf("Prune: %v", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := NewRef()
			b := a
			b.Tenant = NewTenant()
			putThread(t, s, a)
			// A copy target that exists only in tenant a.
			aCopy := a
			aCopy.ThreadID += "-copy"
			putThread(t, s, aCopy)
			if tt.bothHaveData {
				putThread(t, s, b)
			}
			before := MustList(t, s, saver.ListFilter{Tenant: a.Tenant})
			tt.op(t, b)
			MustEqualTuples(t, MustList(t, s, saver.ListFilter{Tenant: a.Tenant}), before)
			// Writes on checkpoints not put yet are the tenant's own too.
			MustPutCheckpoint(t, s, NewCheckpoint(a, "0000"))
			if got, want := WriteValues(MustGetTuple(t, s, At(a, "0000"))), []string{"task/0/ch=orphan"}; len(got) != 1 || got[0] != want[0] {
				t.Fatalf("orphan writes of tenant a = %v, want %v", got, want)
			}
		})
	}
}
