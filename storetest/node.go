package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/saver-dev/saver"
)

var nodeTests = []treeTest{
	{"Run", testNodesOfARun},
	{"Metadata", testNodeMetadata},
	{"Upsert", testNodesUpsert},
	{"TrickyIDs", testNodesTrickyIDs},
	{"LongThread", testNodesLongThread},
}

// testNodesOfARun puts what a LangGraph run with a fork and a nested subgraph
// stores, with payloads and metadata beyond the node's fields, and lists
// every checkpoint back as a node.
func testNodesOfARun(t *testing.T, s TreeStore) {
	ref := NewRef()
	child := InNS(ref, "child:6a1")
	grand := InNS(ref, "child:6a1|grand:9f2")
	cps := []struct {
		ref            saver.CheckpointRef
		id, parent     string
		source         string
		step           int64
		parents        map[string]any
		wantParents    map[string]string
		writesMetadata bool
	}{
		{ref, "0001", "", "input", -1, nil, nil, false},
		{ref, "0002", "0001", "loop", 0, nil, nil, true},
		{ref, "0003", "0002", "loop", 1, map[string]any{}, nil, true},
		{ref, "0004", "0003", "loop", 2, nil, nil, false},
		// A fork of 0004, as update_state from 0003 makes.
		{ref, "0005", "0003", "update", 2, nil, nil, false},
		{child, "0003.1", "", "input", -1, map[string]any{"": "0003"}, map[string]string{"": "0003"}, false},
		{child, "0003.2", "0003.1", "loop", 0, map[string]any{"": "0003"}, map[string]string{"": "0003"}, true},
		{grand, "0003.2.1", "", "input", -1,
			map[string]any{"": "0003", "child:6a1": "0003.2"},
			map[string]string{"": "0003", "child:6a1": "0003.2"}, false},
	}
	var want []saver.Node
	for _, c := range cps {
		in := NewCheckpoint(c.ref, c.id)
		in.ParentID = c.parent
		in.Body = saver.Typed{Type: "msgpack", Data: []byte(strings.Repeat("body ", 1000))}
		in.Metadata = saver.Metadata{"source": c.source, "step": c.step, "run_id": "run-1", "thread_id": ref.ThreadID}
		if c.parents != nil {
			in.Metadata["parents"] = c.parents
		}
		if c.writesMetadata {
			// Older LangGraph versions keep each node's output in metadata.
			in.Metadata["writes"] = map[string]any{"agent": map[string]any{"messages": []any{strings.Repeat("m", 4096)}}}
		}
		SetChannel(&in, "messages", c.id, "messages at "+c.id)
		MustPutCheckpoint(t, s, in)
		n := NodeOf(in)
		n.Source, n.Step, n.Parents = c.source, c.step, c.wantParents
		want = append(want, n)
	}
	MustEqualNodes(t, s, ref.Tenant, ref.ThreadID, want)
}

// testNodeMetadata reads source, step and parents from metadata of every
// shape: a field that is missing or of another type reads as its zero value,
// a step is an integer whether stored as one or as a float, and parents keep
// only their string values.
func testNodeMetadata(t *testing.T, s TreeStore) {
	tests := []struct {
		name    string
		md      saver.Metadata
		source  string
		step    int64
		parents map[string]string
	}{
		{"Typical", saver.Metadata{"source": "loop", "step": int64(3)}, "loop", 3, nil},
		{"Empty", saver.Metadata{}, "", 0, nil},
		{"InputStep", saver.Metadata{"source": "input", "step": int64(-1)}, "input", -1, nil},
		{"LargeStep", saver.Metadata{"step": int64(1) << 40}, "", 1 << 40, nil},
		{"FloatStep", saver.Metadata{"step": 3.0}, "", 3, nil},
		{"NegativeFloatStep", saver.Metadata{"step": -1.0}, "", -1, nil},
		{"StringStep", saver.Metadata{"step": "3"}, "", 0, nil},
		{"BoolStep", saver.Metadata{"step": true}, "", 0, nil},
		{"NullStep", saver.Metadata{"step": nil}, "", 0, nil},
		{"NumberSource", saver.Metadata{"source": int64(1)}, "", 0, nil},
		{"NullSource", saver.Metadata{"source": nil}, "", 0, nil},
		{"Parents", saver.Metadata{"parents": map[string]any{"": "p0", "child:1": "p1"}},
			"", 0, map[string]string{"": "p0", "child:1": "p1"}},
		{"ParentsNonString", saver.Metadata{"parents": map[string]any{
			"": "p0", "n": int64(1), "f": 1.5, "b": true, "z": nil, "l": []any{"x"}, "m": map[string]any{"x": "y"},
		}}, "", 0, map[string]string{"": "p0"}},
		{"ParentsEmpty", saver.Metadata{"parents": map[string]any{}}, "", 0, nil},
		{"ParentsString", saver.Metadata{"parents": "p0"}, "", 0, nil},
		{"ParentsList", saver.Metadata{"parents": []any{"p0"}}, "", 0, nil},
		{"ParentsNull", saver.Metadata{"parents": nil}, "", 0, nil},
		{"Nested", saver.Metadata{
			"source": "loop", "step": int64(2),
			"extra": map[string]any{"source": "nested", "step": int64(9), "parents": map[string]any{"": "nested"}},
			"list":  []any{map[string]any{"step": int64(9)}, []any{"source"}},
		}, "loop", 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := NewRef()
			in := NewCheckpoint(ref, "0001")
			in.Metadata = tt.md
			MustPutCheckpoint(t, s, in)
			want := NodeOf(in)
			want.Source, want.Step, want.Parents = tt.source, tt.step, tt.parents
			MustEqualNodes(t, s, ref.Tenant, ref.ThreadID, []saver.Node{want})
		})
	}
}

// testNodesUpsert re-puts a checkpoint with other metadata and parent: its
// node shows the latest put, and its writes still count.
func testNodesUpsert(t *testing.T, s TreeStore) {
	ref := NewRef()
	in := NewCheckpoint(ref, "0002")
	in.ParentID = "0001"
	MustPutCheckpoint(t, s, in)
	MustPutWrites(t, s, in.CheckpointRef, errorWrite("task", "boom"))
	in.ParentID = "0000"
	in.Metadata = saver.Metadata{"source": "update", "step": int64(7), "parents": map[string]any{"": "p"}}
	MustPutCheckpoint(t, s, in)
	want := NodeOf(in)
	want.Source, want.Step, want.Parents, want.HasError = "update", 7, map[string]string{"": "p"}, true
	MustEqualNodes(t, s, ref.Tenant, ref.ThreadID, []saver.Node{want})
}

// testNodesTrickyIDs fills a thread with namespaces and ids that share
// prefixes and hold separator bytes, with flags on some of them: each node
// and each flag lands on its own checkpoint.
func testNodesTrickyIDs(t *testing.T, s TreeStore) {
	ref := NewRef()
	var want []saver.Node
	for i, ns := range trickyNS {
		parent := ""
		for j, id := range trickyIDs {
			in := NewCheckpoint(InNS(ref, ns), id)
			in.ParentID = parent
			in.Metadata["step"] = int64(10*i + j)
			MustPutCheckpoint(t, s, in)
			n := NodeOf(in)
			n.Source, n.Step = "loop", int64(10*i+j)
			// Every checkpoint gets an ordinary write; flags go on a pattern
			// that differs between neighbours.
			writes := []saver.Write{NewWrite("task", 0, "ch", ns+"/"+id)}
			if (i+j)%2 == 0 {
				writes = append(writes, errorWrite("task", "error"))
				n.HasError = true
			}
			if (i+j)%3 == 0 {
				writes = append(writes, interruptWrite("task", "interrupt"))
				n.HasInterrupt = true
			}
			MustPutWrites(t, s, in.CheckpointRef, writes...)
			want = append(want, n)
			parent = id
		}
	}
	MustEqualNodes(t, s, ref.Tenant, ref.ThreadID, want)
}

// testNodesLongThread lists a thread of many checkpoints with sizeable
// payloads, some of them with error writes.
func testNodesLongThread(t *testing.T, s TreeStore) {
	const n = 500
	ref := NewRef()
	body := saver.Typed{Type: "msgpack", Data: []byte(strings.Repeat("x", 16<<10))}
	want := make([]saver.Node, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		id, parent := fmt.Sprintf("%06d", i), ""
		if i > 0 {
			parent = fmt.Sprintf("%06d", i-1)
		}
		in := NewCheckpoint(ref, id)
		in.ParentID = parent
		in.Body = body
		in.Metadata["step"] = int64(i)
		SetChannel(&in, "messages", id, strings.Repeat("v", 4<<10))
		if err := in.Validate(); err != nil {
			t.Fatalf("Validate: %v", err)
		}
		want[i] = NodeOf(in)
		want[i].Source, want[i].Step, want[i].HasError = "loop", int64(i), i%10 == 0
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := s.PutCheckpoint(t.Context(), in); err != nil {
				t.Errorf("PutCheckpoint(%s): %v", id, err)
				return
			}
			writes := saver.PutWrites{CheckpointRef: in.CheckpointRef, Writes: []saver.Write{NewWrite("task", 0, "ch", id)}}
			if i%10 == 0 {
				writes.Writes = append(writes.Writes, errorWrite("task", "error at "+id))
			}
			if err := s.PutWrites(t.Context(), writes); err != nil {
				t.Errorf("PutWrites(%s): %v", id, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	MustEqualNodes(t, s, ref.Tenant, ref.ThreadID, want)
}

var flagTests = []treeTest{
	{"Writes", testFlags},
	{"OwnCheckpointOnly", testFlagsOwnCheckpointOnly},
}

// testFlags sets HasError and HasInterrupt from the special writes on a
// checkpoint, whether they came before or after its put.
func testFlags(t *testing.T, s TreeStore) {
	tests := []struct {
		name                   string
		before, after          []saver.Write
		hasError, hasInterrupt bool
	}{
		{"None", nil, nil, false, false},
		{"Ordinary", nil, []saver.Write{NewWrite("task", 0, "ch", "v"), NewWrite("task", 1, "other", "v")}, false, false},
		{"Error", nil, []saver.Write{NewWrite("task", 0, "ch", "v"), errorWrite("task", "boom")}, true, false},
		{"Interrupt", nil, []saver.Write{interruptWrite("task", "ask")}, false, true},
		{"Both", nil, []saver.Write{errorWrite("a", "boom"), interruptWrite("b", "ask")}, true, true},
		{"OtherSpecial", nil, []saver.Write{scheduledWrite("task"), resumeWrite("task")}, false, false},
		{"OneTaskOfMany", nil, []saver.Write{
			NewWrite("a", 0, "ch", "v"), NewWrite("b", 0, "ch", "v"), errorWrite("c", "boom"), NewWrite("d", 0, "ch", "v"),
		}, true, false},
		{"BeforePut", []saver.Write{errorWrite("task", "boom"), interruptWrite("task", "ask")}, nil, true, true},
		{"Replaced", []saver.Write{errorWrite("task", "first")}, []saver.Write{errorWrite("task", "second")}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := NewRef()
			in := NewCheckpoint(ref, "0001")
			if len(tt.before) > 0 {
				MustPutWrites(t, s, in.CheckpointRef, tt.before...)
			}
			MustPutCheckpoint(t, s, in)
			if len(tt.after) > 0 {
				MustPutWrites(t, s, in.CheckpointRef, tt.after...)
			}
			want := NodeOf(in)
			want.Source, want.HasError, want.HasInterrupt = "loop", tt.hasError, tt.hasInterrupt
			MustEqualNodes(t, s, ref.Tenant, ref.ThreadID, []saver.Node{want})
		})
	}
}

// testFlagsOwnCheckpointOnly puts special writes next to a checkpoint (same
// id in another namespace, ids that extend it, the same id in a neighbouring
// thread) and checks that none of them flags it.
func testFlagsOwnCheckpointOnly(t *testing.T, s TreeStore) {
	ref := NewRef()
	in := NewCheckpoint(ref, "0001")
	MustPutCheckpoint(t, s, in)
	near := []saver.CheckpointRef{
		At(InNS(ref, "child:1"), "0001"),
		At(InNS(ref, "\x00"), "0001"),
		At(ref, "0001\x00"),
		At(ref, "00010"),
		At(ref, "0000"),
	}
	for _, n := range neighbours(ref) {
		near = append(near, At(n, "0001"))
	}
	other := ref
	other.Tenant = NewTenant()
	near = append(near, At(other, "0001"))
	for _, r := range near {
		MustPutWrites(t, s, r, errorWrite("task", "boom"), interruptWrite("task", "ask"))
	}
	// Checkpoints put next to it carry their flags, it does not.
	sibling := NewCheckpoint(ref, "0001\x00")
	MustPutCheckpoint(t, s, sibling)
	want := []saver.Node{NodeOf(in), NodeOf(sibling)}
	want[0].Source, want[1].Source = "loop", "loop"
	want[1].HasError, want[1].HasInterrupt = true, true
	MustEqualNodes(t, s, ref.Tenant, ref.ThreadID, want)
}
