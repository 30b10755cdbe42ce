package storetest

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/saver-dev/saver"
)

// TreeStore is a store that also lists the nodes of its threads' trees: the
// tree contract puts checkpoints and writes through saver.Store and reads
// them back through saver.TreeStore.
type TreeStore interface {
	saver.Store
	saver.TreeStore
}

// treeTest is one subtest of the tree contract.
type treeTest = storeTest[TreeStore]

// RunTree runs the contract of saver.TreeStore against the store that open
// returns, on the same terms as Run: open is called once per subtest,
// possibly in parallel, and may return one shared store every time.
func RunTree(t *testing.T, open func(t *testing.T) TreeStore) {
	runStoreGroups(t, []group[treeTest]{
		{"Nodes", nodeTests},
		{"Flags", flagTests},
		{"Scope", treeScopeTests},
		{"Lifecycle", treeLifecycleTests},
		{"Resume", resumeTests},
	}, open)
}

// MustListNodes returns the nodes of a thread sorted by namespace and id: the
// contract sets no order, so comparisons need one.
func MustListNodes(tb testing.TB, s saver.TreeStore, tenant, threadID string) []saver.Node {
	tb.Helper()
	nodes, err := s.ListNodes(tb.Context(), tenant, threadID)
	if err != nil {
		tb.Fatalf("ListNodes(%q): %v", threadID, err)
	}
	SortNodes(nodes)
	return nodes
}

// SortNodes sorts nodes by namespace, then id.
func SortNodes(nodes []saver.Node) {
	slices.SortFunc(nodes, func(a, b saver.Node) int {
		if c := strings.Compare(a.NS, b.NS); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// NodeOptions compare nodes as the contract defines them: no parents and an
// empty parents map are the same.
var NodeOptions = cmp.Options{cmpopts.EquateEmpty()}

// MustEqualNodes fails unless the thread's nodes are want, in any order.
func MustEqualNodes(tb testing.TB, s saver.TreeStore, tenant, threadID string, want []saver.Node) {
	tb.Helper()
	want = slices.Clone(want)
	SortNodes(want)
	if diff := cmp.Diff(want, MustListNodes(tb, s, tenant, threadID), NodeOptions); diff != "" {
		tb.Fatalf("nodes of thread %q mismatch (-want +got):\n%s", threadID, diff)
	}
}

// NodeOf returns the node of a checkpoint as its put names it: keys and
// parent link, with no metadata fields and no flags. Tests set the rest.
func NodeOf(in saver.PutCheckpoint) saver.Node {
	return saver.Node{ThreadID: in.ThreadID, NS: in.NS, ID: in.ID, ParentID: in.ParentID}
}

// Special writes as LangGraph stores them: each special channel has its own
// negative idx (WRITES_IDX_MAP), and a task writes at most one of each.
func errorWrite(task, value string) saver.Write {
	return NewWrite(task, -1, saver.ChannelError, value)
}

func interruptWrite(task, value string) saver.Write {
	return NewWrite(task, -3, saver.ChannelInterrupt, value)
}

func scheduledWrite(task string) saver.Write { return NewWrite(task, -2, "__scheduled__", "s") }

func resumeWrite(task string) saver.Write { return NewWrite(task, -4, "__resume__", "r") }

// threadNodes returns the nodes of a thread filled by putThread: every
// checkpoint carries an error write, and orphan writes make no node.
func threadNodes(d threadData) []saver.Node {
	var out []saver.Node
	for _, in := range d.puts {
		n := NodeOf(in)
		n.Source = "loop"
		n.Step = in.Metadata["step"].(int64)
		n.HasError = true
		out = append(out, n)
	}
	return out
}

var treeScopeTests = []treeTest{
	{"UnknownThread", testNodesUnknownThread},
	{"OrphanWrites", testNodesOrphanWrites},
	{"Isolated", testNodesIsolated},
}

// testNodesUnknownThread lists threads that have no checkpoint: an empty
// answer, not an error.
func testNodesUnknownThread(t *testing.T, s TreeStore) {
	ref := NewRef()
	// A thread of another tenant, and a neighbour, exist; this one does not.
	other := ref
	other.Tenant = NewTenant()
	putThread(t, s, other)
	putThread(t, s, neighbours(ref)[0])
	if got := MustListNodes(t, s, ref.Tenant, ref.ThreadID); len(got) != 0 {
		t.Fatalf("unknown thread lists %v", got)
	}
	if got := MustListNodes(t, s, NewTenant(), ref.ThreadID); len(got) != 0 {
		t.Fatalf("unknown tenant lists %v", got)
	}
}

// testNodesOrphanWrites stores writes against checkpoints that were never
// put, some of them special: they make no node, and a thread that has only
// such writes has no node at all.
func testNodesOrphanWrites(t *testing.T, s TreeStore) {
	ref := NewRef()
	orphans := []saver.CheckpointRef{At(ref, "0001"), At(ref, "0003"), At(InNS(ref, "writes-only"), "0002")}
	for _, o := range orphans {
		MustPutWrites(t, s, o, NewWrite("task", 0, "ch", "orphan"), errorWrite("task", "boom"), interruptWrite("task", "ask"))
	}
	if got := MustListNodes(t, s, ref.Tenant, ref.ThreadID); len(got) != 0 {
		t.Fatalf("thread with only writes lists %v", got)
	}
	in := NewCheckpoint(ref, "0002")
	MustPutCheckpoint(t, s, in)
	want := NodeOf(in)
	want.Source = "loop"
	MustEqualNodes(t, s, ref.Tenant, ref.ThreadID, []saver.Node{want})
}

// testNodesIsolated fills threads whose ids are close to the listed one, and
// the same thread id in another tenant: none of their nodes show.
func testNodesIsolated(t *testing.T, s TreeStore) {
	ref := NewRef()
	others := neighbours(ref)
	other := ref
	other.Tenant = NewTenant()
	others = append(others, other)
	var data []threadData
	for _, o := range others {
		d := putThread(t, s, o)
		// An extra checkpoint per neighbour, so that a leak shows in the count.
		MustPutCheckpoint(t, s, NewCheckpoint(o, "0009"))
		data = append(data, d)
	}
	d := putThread(t, s, ref)
	MustEqualNodes(t, s, ref.Tenant, ref.ThreadID, threadNodes(d))
	for i, o := range others {
		extra := NodeOf(NewCheckpoint(o, "0009"))
		extra.Source = "loop"
		MustEqualNodes(t, s, o.Tenant, o.ThreadID, append(threadNodes(data[i]), extra))
	}
}

var treeLifecycleTests = []treeTest{
	{"Changes", testNodesFollowChanges},
	{"CopyThread", testNodesCopyThread},
}

// testNodesFollowChanges runs each operation that changes a thread and
// checks that its nodes follow, and that a neighbouring thread's do not move.
func testNodesFollowChanges(t *testing.T, s TreeStore) {
	// keep returns the nodes of d whose (ns, id) is in keys.
	keep := func(d threadData, keys ...[2]string) []saver.Node {
		var out []saver.Node
		for _, n := range threadNodes(d) {
			if slices.Contains(keys, [2]string{n.NS, n.ID}) {
				out = append(out, n)
			}
		}
		return out
	}
	tests := []struct {
		name string
		op   func(t *testing.T, ref saver.CheckpointRef)
		want func(d threadData) []saver.Node
		// tenantWide ops change the neighbour as they change the thread.
		tenantWide bool
	}{
		{"DeleteThread", func(t *testing.T, ref saver.CheckpointRef) {
			if err := s.DeleteThread(t.Context(), ref.Tenant, ref.ThreadID); err != nil {
				t.Fatalf("DeleteThread: %v", err)
			}
		}, func(threadData) []saver.Node { return nil }, false},
		{"PruneDelete", func(t *testing.T, ref saver.CheckpointRef) {
			if err := s.Prune(t.Context(), ref.Tenant, []string{ref.ThreadID}, saver.PruneDelete); err != nil {
				t.Fatalf("Prune: %v", err)
			}
		}, func(threadData) []saver.Node { return nil }, false},
		{"PruneKeepLatest", func(t *testing.T, ref saver.CheckpointRef) {
			if err := s.Prune(t.Context(), ref.Tenant, []string{ref.ThreadID}, saver.PruneKeepLatest); err != nil {
				t.Fatalf("Prune: %v", err)
			}
		}, func(d threadData) []saver.Node { return keep(d, [2]string{"", "0003"}, [2]string{"child:1", "0002"}) }, false},
		{"DeleteForRuns", func(t *testing.T, ref saver.CheckpointRef) {
			if err := s.DeleteForRuns(t.Context(), ref.Tenant, []string{"run-0002"}); err != nil {
				t.Fatalf("DeleteForRuns: %v", err)
			}
		}, func(d threadData) []saver.Node { return keep(d, [2]string{"", "0001"}, [2]string{"", "0003"}) }, true},
		{"PutAndWrite", func(t *testing.T, ref saver.CheckpointRef) {
			in := NewCheckpoint(ref, "0004")
			in.ParentID = "0003"
			MustPutCheckpoint(t, s, in)
			MustPutWrites(t, s, in.CheckpointRef, interruptWrite("task", "ask"))
		}, func(d threadData) []saver.Node {
			n := NodeOf(NewCheckpoint(d.puts[0].CheckpointRef, "0004"))
			n.ParentID, n.Source, n.HasInterrupt = "0003", "loop", true
			return append(threadNodes(d), n)
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := NewRef()
			d := putThread(t, s, ref)
			neighbour := neighbours(ref)[0]
			nd := putThread(t, s, neighbour)
			tt.op(t, ref)
			MustEqualNodes(t, s, ref.Tenant, ref.ThreadID, tt.want(d))
			wantNeighbour := threadNodes(nd)
			if tt.tenantWide {
				wantNeighbour = tt.want(nd)
			}
			MustEqualNodes(t, s, neighbour.Tenant, neighbour.ThreadID, wantNeighbour)
		})
	}
}

// testNodesCopyThread copies a thread: the copy lists the source's nodes
// under its own thread id, and the source's stay as they were.
func testNodesCopyThread(t *testing.T, s TreeStore) {
	src := NewRef()
	d := putThread(t, s, src)
	dst := src
	dst.ThreadID += "-copy"
	if err := s.CopyThread(t.Context(), src.Tenant, src.ThreadID, dst.ThreadID); err != nil {
		t.Fatalf("CopyThread: %v", err)
	}
	want := threadNodes(d)
	MustEqualNodes(t, s, src.Tenant, src.ThreadID, want)
	for i := range want {
		want[i].ThreadID = dst.ThreadID
	}
	MustEqualNodes(t, s, dst.Tenant, dst.ThreadID, want)
}
