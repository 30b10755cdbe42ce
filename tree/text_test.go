package tree_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/tree"
)

func TestResumeContext(t *testing.T) {
	tests := []struct {
		name  string
		nodes []saver.Node
		limit int
		want  string
	}{
		{"Empty", nil, 0, ""},
		// "loop" and "ok" go without saying.
		{"Chain", chain, 0, `step -1 · input
step 0
step 1
step 2
`},
		{"Retries", retries, 0, `step -1 · input
step 0 · error, retried
step 1
step 2 · error
`},
		{"Interrupts", interrupts, 0, `step -1 · input
step 0
step 1 · interrupted, resumed
step 2
step 3 · interrupted
`},
		{"Forks", branchOfBranch, 0, `step -1 · input
step 0 · 2 abandoned branches
step 1 · fork
step 2
`},
		// LangGraph's exit-mode stub checkpoint has no source.
		{"NoSource", []saver.Node{{ID: "01", Step: -2}}, 0, "step -2 · -\n"},
		{"Limit", failedThenForked, 2, `… 2 earlier steps left out
step 1 · fork
step 2
`},
		{"LimitAbove", timeTravel, 9, `step -1 · input
step 0 · 1 abandoned branch
step 1 · fork
step 2
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tree.Build(tt.nodes).ResumeContext(tt.limit)); diff != "" {
				t.Errorf("ResumeContext (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDraw(t *testing.T) {
	tests := []struct {
		name  string
		nodes []saver.Node
		want  string
	}{
		{"Empty", nil, ""},
		// The abandoned branch 03 forked again: its newest child 05
		// continues it, the older 04 hangs off it.
		{"BranchOfBranch", branchOfBranch, `01 · step -1 · input · ok
02 · step 0 · loop · ok
├─ 03 · step 1 · loop · ok
│  ├─ 04 · step 2 · loop · ok · abandoned
│  05 · step 2 · fork · ok · abandoned
06 · step 1 · fork · ok
07 · step 2 · loop · ok · head
`},
		{"FailedThenForked", failedThenForked, `01 · step -1 · input · ok
02 · step 0 · loop · ok
├─ 03 · step 1 · loop · error · abandoned
04 · step 1 · fork · ok
05 · step 2 · loop · ok · head
`},
		{"Subgraphs", subgraphs, `01 · step -1 · input · ok
02 · step 0 · loop · ok
├─ 10 · step -1 · input · ok · ns outer:t1
│  11 · step 0 · loop · ok
│  ├─ 20 · step -1 · input · ok · ns outer:t1|inner:t2
│  │  21 · step 0 · loop · ok
│  ├─ 40 · step -1 · input · ok · ns outer:t1|inner:t2|2
│  12 · step 1 · loop · ok
├─ 30 · step -1 · input · ok · ns outer:t1|1
03 · step 1 · loop · ok
04 · step 2 · loop · ok · head
`},
		// A leaf whose only children are subgraph roots ends with └─.
		{"SubgraphsUnderHead", namespaces, `01 · step -1 · input · ok
02 · step 0 · loop · ok
├─ 10 · step -1 · input · ok · ns a:1
│  11 · step 0 · loop · ok
├─ 20 · step -1 · input · ok · ns b:2
│  21 · step 0 · loop · interrupted
├─ 30 · step -1 · input · ok · ns c
│  31 · step 0 · loop · ok
03 · step 1 · loop · interrupted · head
`},
		{"Orphans", append(orphans[:len(orphans):len(orphans)], sub("s:3", "30", "", -1, map[string]string{"": "05"})), `01 · step -1 · input · ok
02 · step 0 · loop · ok · abandoned

04 · step 2 · loop · ok · orphan
05 · step 3 · loop · ok · head
└─ 30 · step -1 · input · ok · ns s:3

10 · step -1 · input · ok · ns s:1 · orphan

20 · step -1 · input · ok · ns s:2 · orphan
21 · step 0 · loop · ok
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tree.Build(tt.nodes).Draw()); diff != "" {
				t.Errorf("Draw (-want +got):\n%s", diff)
			}
		})
	}
}

// An abandoned branch whose older child forks again at every level would
// indent once per level; the drawing caps that so it stays linear in size.
func TestDrawIndentBounded(t *testing.T) {
	nodes := []saver.Node{cp("a", "", "input", -1), cp("z", "a", "loop", 0)}
	parent := "a"
	for i := range 1000 {
		deep, leaf := fmt.Sprintf("b%04d", i), fmt.Sprintf("c%04d", i)
		nodes = append(nodes, cp(deep, parent, "fork", int64(i)), cp(leaf, parent, "fork", int64(i)))
		parent = deep
	}
	tr := tree.Build(nodes)
	lines := strings.Split(strings.TrimSuffix(tr.Draw(), "\n"), "\n")
	if got, want := len(lines), len(nodes); got != want {
		t.Fatalf("%d lines, want %d", got, want)
	}
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > 160 {
			t.Fatalf("line of %d runes: %q", n, l)
		}
	}
	if got, want := len(tr.Abandoned()), 1001; got != want {
		t.Errorf("len(Abandoned)=%d, want %d", got, want)
	}
}
