package tree_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/tree"
)

// summary is what a tree answers, in a form tests can compare.
type summary struct {
	Head      string
	Live      []string
	Leaves    []string
	Orphans   []string
	Failures  []string
	Abandoned []tree.Branch
}

func summarize(t *tree.Tree) summary {
	s := summary{Live: keys(t.LivePath()), Leaves: keys(t.Leaves()), Abandoned: t.Abandoned()}
	if h := t.Head(); h != nil {
		s.Head = h.ID
	}
	for _, e := range t.Compact() {
		if e.Orphan {
			s.Orphans = append(s.Orphans, key(e.NS, e.ID))
		}
	}
	for _, n := range t.Failures() {
		s.Failures = append(s.Failures, key(n.NS, n.ID)+" "+string(n.Status()))
	}
	return s
}

// key names a node as "id" in the root namespace and "ns/id" elsewhere.
func key(ns, id string) string {
	if ns == "" {
		return id
	}
	return ns + "/" + id
}

func keys(nodes []*tree.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, key(n.NS, n.ID))
	}
	return out
}

func TestBuild(t *testing.T) {
	tests := []struct {
		name  string
		nodes []saver.Node
		want  summary
	}{
		{
			name:  "Empty",
			nodes: nil,
			want:  summary{},
		},
		{
			name:  "Chain",
			nodes: chain,
			want: summary{
				Head:   "04",
				Live:   []string{"01", "02", "03", "04"},
				Leaves: []string{"04"},
			},
		},
		{
			name:  "TimeTravel",
			nodes: timeTravel,
			want: summary{
				Head:      "06",
				Live:      []string{"01", "02", "05", "06"},
				Leaves:    []string{"04", "06"},
				Abandoned: []tree.Branch{{ForkPoint: "02", From: "02", IDs: []string{"03", "04"}, Status: tree.StatusOK}},
			},
		},
		{
			name:  "UpdateState",
			nodes: updateState,
			want: summary{
				Head:      "06",
				Live:      []string{"01", "02", "04", "05", "06"},
				Leaves:    []string{"03", "06"},
				Abandoned: []tree.Branch{{ForkPoint: "02", From: "02", IDs: []string{"03"}, Status: tree.StatusOK}},
			},
		},
		{
			name:  "RetryAfterError",
			nodes: retries,
			want: summary{
				Head:     "04",
				Live:     []string{"01", "02", "03", "04"},
				Leaves:   []string{"04"},
				Failures: []string{"02 retried", "04 error"},
			},
		},
		{
			name:  "InterruptThenResume",
			nodes: interrupts,
			want: summary{
				Head:   "05",
				Live:   []string{"01", "02", "03", "04", "05"},
				Leaves: []string{"05"},
			},
		},
		{
			name:  "FailedThenForked",
			nodes: failedThenForked,
			want: summary{
				Head:      "05",
				Live:      []string{"01", "02", "04", "05"},
				Leaves:    []string{"03", "05"},
				Failures:  []string{"03 error"},
				Abandoned: []tree.Branch{{ForkPoint: "02", From: "02", IDs: []string{"03"}, Status: tree.StatusError}},
			},
		},
		{
			name:  "BranchOfBranch",
			nodes: branchOfBranch,
			want: summary{
				Head:   "07",
				Live:   []string{"01", "02", "06", "07"},
				Leaves: []string{"04", "05", "07"},
				Abandoned: []tree.Branch{
					{ForkPoint: "02", From: "02", IDs: []string{"03", "05"}, Status: tree.StatusOK},
					{ForkPoint: "02", From: "03", IDs: []string{"04"}, Status: tree.StatusOK},
				},
			},
		},
		{
			name:  "NestedSubgraphs",
			nodes: subgraphs,
			want: summary{
				Head:   "04",
				Live:   []string{"01", "02", "03", "04"},
				Leaves: []string{"04", "outer:t1/12", "outer:t1|1/30", "outer:t1|inner:t2/21", "outer:t1|inner:t2|2/40"},
			},
		},
		{
			name:  "SeveralNamespaces",
			nodes: namespaces,
			want: summary{
				Head:   "03",
				Live:   []string{"01", "02", "03"},
				Leaves: []string{"03", "a:1/11", "b:2/21", "c/31"},
			},
		},
		{
			name:  "PrunedParents",
			nodes: orphans,
			want: summary{
				Head:    "05",
				Live:    []string{"04", "05"},
				Leaves:  []string{"02", "05", "s:1/10", "s:2/21"},
				Orphans: []string{"04", "s:1/10", "s:2/20"},
				// The start of the thread survives, cut off from the head.
				Abandoned: []tree.Branch{{IDs: []string{"01", "02"}, Status: tree.StatusOK}},
			},
		},
		{
			name:  "Cycles",
			nodes: cycles,
			want: summary{
				Head:    "06",
				Live:    []string{"03", "04", "06"},
				Leaves:  []string{"02", "05", "06", "x:1/90"},
				Orphans: []string{"03", "x:1/90"},
				Abandoned: []tree.Branch{
					{IDs: []string{"01", "02"}, Status: tree.StatusOK},
					{ForkPoint: "04", From: "04", IDs: []string{"05"}, Status: tree.StatusOK},
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := summarize(tree.Build(tt.nodes))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("tree (-want +got):\n%s", diff)
			}
		})
	}
}

// The answers must not depend on the order a store returns nodes in.
func TestBuildOrderIndependent(t *testing.T) {
	scenarios := map[string][]saver.Node{
		"TimeTravel": timeTravel, "BranchOfBranch": branchOfBranch, "Subgraphs": subgraphs,
		"Namespaces": namespaces, "Orphans": orphans, "Cycles": cycles,
	}
	for name, nodes := range scenarios {
		t.Run(name, func(t *testing.T) {
			want := tree.Build(nodes)
			r := rand.New(rand.NewPCG(1, 2))
			for range 20 {
				shuffled := append([]saver.Node(nil), nodes...)
				r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
				got := tree.Build(shuffled)
				if diff := cmp.Diff(want.Compact(), got.Compact()); diff != "" {
					t.Fatalf("Compact (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(want.Draw(), got.Draw()); diff != "" {
					t.Fatalf("Draw (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestPath(t *testing.T) {
	tests := []struct {
		name  string
		nodes []saver.Node
		ns    string
		id    string
		want  []string
	}{
		{"Root", chain, "", "01", []string{"01"}},
		{"AbandonedLeaf", timeTravel, "", "04", []string{"01", "02", "03", "04"}},
		{"IntoSubgraph", subgraphs, "outer:t1", "12", []string{"01", "02", "outer:t1/10", "outer:t1/11", "outer:t1/12"}},
		{"TwoLevelsDown", subgraphs, "outer:t1|inner:t2", "21", []string{
			"01", "02", "outer:t1/10", "outer:t1/11", "outer:t1|inner:t2/20", "outer:t1|inner:t2/21",
		}},
		{"RepeatedCall", subgraphs, "outer:t1|1", "30", []string{"01", "02", "outer:t1|1/30"}},
		{"RepeatedNestedCall", subgraphs, "outer:t1|inner:t2|2", "40", []string{"01", "02", "outer:t1/10", "outer:t1/11", "outer:t1|inner:t2|2/40"}},
		{"CheckpointerTrue", namespaces, "c", "31", []string{"01", "02", "c/30", "c/31"}},
		{"Orphan", orphans, "s:2", "21", []string{"s:2/20", "s:2/21"}},
		{"CutCycle", cycles, "", "05", []string{"03", "04", "05"}},
		{"SelfParent", cycles, "x:1", "90", []string{"x:1/90"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := tree.Build(tt.nodes).Get(tt.ns, tt.id)
			if n == nil {
				t.Fatalf("Get(%q, %q) = nil", tt.ns, tt.id)
			}
			if diff := cmp.Diff(tt.want, keys(n.Path())); diff != "" {
				t.Errorf("Path (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRoots(t *testing.T) {
	tr := tree.Build(orphans)
	if diff := cmp.Diff([]string{"01", "04", "s:1/10", "s:2/20"}, keys(tr.Roots())); diff != "" {
		t.Errorf("Roots (-want +got):\n%s", diff)
	}
	want := []tree.Entry{
		{ID: "04", Source: "loop", Step: 2, Status: tree.StatusOK, OnLivePath: true, Orphan: true},
		{ID: "05", Parent: "04", Source: "loop", Step: 3, Status: tree.StatusOK, OnLivePath: true},
	}
	if diff := cmp.Diff(want, tree.Entries(tr.LivePath())); diff != "" {
		t.Errorf("Entries(LivePath) (-want +got):\n%s", diff)
	}
}

func TestGetMissing(t *testing.T) {
	tr := tree.Build(subgraphs)
	// Ids are per namespace: 10 exists, but not in the root namespace.
	for _, k := range [][2]string{{"", "10"}, {"outer:t1", "01"}, {"", "99"}} {
		if n := tr.Get(k[0], k[1]); n != nil {
			t.Errorf("Get(%q, %q) = %s, want nil", k[0], k[1], n.ID)
		}
	}
	if got := tree.Build(nil).LivePath(); got != nil {
		t.Errorf("LivePath of an empty tree = %v, want nil", keys(got))
	}
}

func TestChildren(t *testing.T) {
	tests := []struct {
		name  string
		nodes []saver.Node
		ns    string
		id    string
		want  []string
	}{
		{"Chain", chain, "", "02", []string{"03"}},
		{"Leaf", chain, "", "04", nil},
		{"ForkSiblings", timeTravel, "", "02", []string{"03", "05"}},
		{"UpdateSiblings", updateState, "", "02", []string{"03", "04"}},
		{"SubgraphRoots", subgraphs, "", "02", []string{"03", "outer:t1/10", "outer:t1|1/30"}},
		{"NestedRoot", subgraphs, "outer:t1", "11", []string{"outer:t1/12", "outer:t1|inner:t2/20", "outer:t1|inner:t2|2/40"}},
		{"Parallel", namespaces, "", "02", []string{"03", "a:1/10", "b:2/20", "c/30"}},
		{"AfterCycleCut", cycles, "", "04", []string{"05", "06"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := tree.Build(tt.nodes).Get(tt.ns, tt.id)
			if diff := cmp.Diff(tt.want, keys(n.Children)); diff != "" {
				t.Errorf("Children (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	tests := []struct {
		name  string
		nodes []saver.Node
		want  map[string]tree.Status // by id, root namespace
	}{
		{"Retry", retries, map[string]tree.Status{
			"01": tree.StatusOK, "02": tree.StatusRetried, "03": tree.StatusOK, "04": tree.StatusError,
		}},
		{"Interrupt", interrupts, map[string]tree.Status{
			"03": tree.StatusResumed, "05": tree.StatusInterrupted,
		}},
		{"ErrorOutranksInterrupt", []saver.Node{paused(failed(cp("01", "", "input", -1)))}, map[string]tree.Status{
			"01": tree.StatusError,
		}},
		// A subgraph run under a checkpoint is part of the step that
		// failed, not a retry of it.
		{"SubgraphIsNoRetry", []saver.Node{
			failed(cp("01", "", "input", -1)),
			failed(sub("n:1", "10", "", -1, map[string]string{"": "01"})),
		}, map[string]tree.Status{
			"01": tree.StatusError,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := tree.Build(tt.nodes)
			got := make(map[string]tree.Status)
			for id := range tt.want {
				got[id] = tr.Get("", id).Status()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompact(t *testing.T) {
	nodes := []saver.Node{
		cp("01", "", "input", -1),
		failed(cp("02", "01", "loop", 0)),
		cp("03", "02", "loop", 1),
		sub("n:1", "10", "", -1, map[string]string{"": "02"}),
		paused(sub("n:1", "11", "10", 0, nil)),
		cp("04", "01", "fork", 0),
		cp("00x", "00w", "loop", 2),
	}
	want := []tree.Entry{
		{ID: "00x", Source: "loop", Step: 2, Status: tree.StatusOK, Orphan: true},
		{ID: "01", Source: "input", Step: -1, Status: tree.StatusOK, OnLivePath: true},
		{ID: "02", Parent: "01", Source: "loop", Step: 0, Status: tree.StatusRetried, HasError: true},
		{ID: "03", Parent: "02", Source: "loop", Step: 1, Status: tree.StatusOK},
		{ID: "10", NS: "n:1", Parent: "02", Source: "input", Step: -1, Status: tree.StatusOK},
		{ID: "11", NS: "n:1", Parent: "10", ParentNS: "n:1", Source: "loop", Step: 0, Status: tree.StatusInterrupted, HasInterrupt: true},
		{ID: "04", Parent: "01", Source: "fork", Step: 0, Status: tree.StatusOK, OnLivePath: true},
	}
	if diff := cmp.Diff(want, tree.Build(nodes).Compact()); diff != "" {
		t.Errorf("Compact (-want +got):\n%s", diff)
	}
}

// The first copy of a (namespace, id) wins; the same id in another
// namespace is another node.
func TestBuildDuplicates(t *testing.T) {
	nodes := []saver.Node{
		cp("01", "", "input", -1),
		cp("02", "01", "loop", 0),
		failed(cp("02", "01", "loop", 0)),
		sub("n:1", "02", "", -1, map[string]string{"": "01"}),
	}
	tr := tree.Build(nodes)
	if got, want := tr.Len(), 3; got != want {
		t.Fatalf("Len=%d, want %d", got, want)
	}
	if tr.Get("", "02").HasError {
		t.Errorf("the second copy of 02 replaced the first")
	}
	if diff := cmp.Diff([]string{"02", "n:1/02"}, keys(tr.Get("", "01").Children)); diff != "" {
		t.Errorf("Children (-want +got):\n%s", diff)
	}
}

// mkChain returns a chain of n checkpoints with fixed-width ids.
func mkChain(n int) []saver.Node {
	nodes := make([]saver.Node, n)
	for i := range nodes {
		nodes[i] = cp(fmt.Sprintf("%08d", i), "", "loop", int64(i))
		if i > 0 {
			nodes[i].ParentID = nodes[i-1].ID
		}
	}
	return nodes
}

// Nothing recurses: a 100,000-deep chain must not blow the stack, and its
// drawing stays one short line per checkpoint.
func TestDeepChain(t *testing.T) {
	const n = 100_000
	nodes := mkChain(n)
	nodes[0].ParentID = nodes[n-1].ID // and a cycle through all of it
	tr := tree.Build(nodes)
	if got := len(tr.LivePath()); got != n {
		t.Fatalf("len(LivePath)=%d, want %d", got, n)
	}
	if got := len(tr.Compact()); got != n {
		t.Fatalf("len(Compact)=%d, want %d", got, n)
	}
	if got, max := len(tr.Draw()), n*60; got > max {
		t.Fatalf("len(Draw)=%d, want at most %d", got, max)
	}
	if got := tr.Abandoned(); len(got) != 0 {
		t.Fatalf("Abandoned=%v, want none", got)
	}
}

func BenchmarkLivePath10k(b *testing.B) {
	nodes := mkChain(10_000)
	// Shuffled, as a store may return them, with a few forks.
	for i := 100; i < len(nodes); i += 100 {
		nodes[i].ParentID = nodes[i-2].ID
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
	for b.Loop() {
		if len(tree.Build(nodes).LivePath()) == 0 {
			b.Fatal("no live path")
		}
	}
}
