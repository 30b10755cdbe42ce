package storetest

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver"
)

var writeTests = []test{
	{"RoundTrip", testWritesRoundTrip},
	{"Idempotent", testWritesIdempotent},
	{"InsertIfAbsent", testWritesInsertIfAbsent},
	{"GrowingReplays", testWritesGrowingReplays},
	{"NegativeIdxUpserts", testWritesNegativeIdxUpserts},
	{"Order", testWritesOrder},
	{"BeforeCheckpoint", testWritesBeforeCheckpoint},
	{"PerCheckpoint", testWritesPerCheckpoint},
	{"PerNamespace", testWritesPerNamespace},
	{"PerThread", testWritesPerThread},
	{"Many", testWritesMany},
}

func testWritesRoundTrip(t *testing.T, s saver.Store) {
	tests := []struct {
		name   string
		writes []saver.Write
	}{
		{"One", []saver.Write{NewWrite("task-1", 0, "channel1", "value1")}},
		{"SameTask", []saver.Write{
			NewWrite("task-1", 0, "a", "1"),
			NewWrite("task-1", 1, "b", "2"),
			NewWrite("task-1", 2, "a", "3"),
		}},
		{"TwoTasksSameChannel", []saver.Write{
			NewWrite("task-1", 0, "ch", "from 1"),
			NewWrite("task-2", 0, "ch", "from 2"),
		}},
		{"SpecialChannels", []saver.Write{
			NewWrite("task-1", -1, "__error__", "something went wrong"),
			NewWrite("task-1", -3, "__interrupt__", "interrupt payload"),
			NewWrite("task-1", -4, "__resume__", "resume payload"),
			NewWrite("task-1", -2, "__scheduled__", ""),
		}},
		{"TaskPathAndBinary", []saver.Write{{
			TaskID: "task-1", TaskPath: "a:b:c", Idx: 0, Channel: "ch",
			Value: saver.Typed{Type: "bytes", Data: []byte{0, 1, 2, 0xff}},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := NewRef()
			in := NewCheckpoint(ref, "0001")
			MustPutCheckpoint(t, s, in)
			MustPutWrites(t, s, At(ref, "0001"), tt.writes...)
			MustEqualTuple(t, MustGetTuple(t, s, ref), WantTuple(in, tt.writes...))
		})
	}
}

// testWritesIdempotent replays the same call, as a retried task does.
func testWritesIdempotent(t *testing.T, s saver.Store) {
	ref := NewRef()
	in := NewCheckpoint(ref, "0001")
	MustPutCheckpoint(t, s, in)
	writes := []saver.Write{
		NewWrite("task-1", 0, "ch", "v"),
		NewWrite("task-1", -1, "__error__", "e"),
	}
	MustPutWrites(t, s, At(ref, "0001"), writes...)
	MustPutWrites(t, s, At(ref, "0001"), writes...)
	MustEqualTuple(t, MustGetTuple(t, s, ref), WantTuple(in, writes...))
}

// testWritesInsertIfAbsent checks that an ordinary write, once stored, is
// never changed: a replayed task must not alter what the first run recorded.
func testWritesInsertIfAbsent(t *testing.T, s saver.Store) {
	ref := NewRef()
	in := NewCheckpoint(ref, "0001")
	MustPutCheckpoint(t, s, in)
	first := saver.Write{TaskID: "task-1", TaskPath: "p1", Idx: 0, Channel: "ch", Value: Typed("first")}
	second := saver.Write{TaskID: "task-1", TaskPath: "p1", Idx: 0, Channel: "other", Value: Typed("second")}
	MustPutWrites(t, s, At(ref, "0001"), first)
	MustPutWrites(t, s, At(ref, "0001"), second, NewWrite("task-1", 1, "ch", "new"))
	MustEqualTuple(t, MustGetTuple(t, s, ref), WantTuple(in, first, NewWrite("task-1", 1, "ch", "new")))
}

// testWritesGrowingReplays replays a task whose every run puts more writes
// than the one before, beside another task: each idx keeps the first run's
// write that had it, and a special write the last one.
func testWritesGrowingReplays(t *testing.T, s saver.Store) {
	ref := NewRef()
	in := NewCheckpoint(ref, "0001")
	MustPutCheckpoint(t, s, in)
	run := func(label string, n int) []saver.Write {
		var ws []saver.Write
		for i := range n {
			ws = append(ws, NewWrite("task-1", int64(i), "ch", fmt.Sprintf("%s %d", label, i)))
		}
		return ws
	}
	at := At(ref, "0001")
	MustPutWrites(t, s, at, run("a", 1)...)
	MustPutWrites(t, s, at, NewWrite("task-2", 0, "ch", "other"))
	MustPutWrites(t, s, at, run("b", 2)...)
	MustPutWrites(t, s, at, append(run("c", 4), NewWrite("task-1", -1, "__error__", "c error"))...)
	MustPutWrites(t, s, at, run("d", 3)...)
	MustPutWrites(t, s, at, run("e", 6)...)
	want := []saver.Write{
		NewWrite("task-1", 0, "ch", "a 0"), NewWrite("task-1", 1, "ch", "b 1"),
		NewWrite("task-1", 2, "ch", "c 2"), NewWrite("task-1", 3, "ch", "c 3"),
		NewWrite("task-1", 4, "ch", "e 4"), NewWrite("task-1", 5, "ch", "e 5"),
		NewWrite("task-1", -1, "__error__", "c error"), NewWrite("task-2", 0, "ch", "other"),
	}
	MustEqualTuple(t, MustGetTuple(t, s, ref), WantTuple(in, want...))
}

// testWritesNegativeIdxUpserts checks that special channels (error,
// interrupt, resume) are replaced by a later write with the same key.
func testWritesNegativeIdxUpserts(t *testing.T, s saver.Store) {
	ref := NewRef()
	in := NewCheckpoint(ref, "0001")
	MustPutCheckpoint(t, s, in)
	MustPutWrites(t, s, At(ref, "0001"),
		NewWrite("task-1", -1, "__error__", "first error"),
		NewWrite("task-1", -3, "__interrupt__", "first interrupt"),
		NewWrite("task-2", -1, "__error__", "other task"),
	)
	replaced := []saver.Write{
		NewWrite("task-1", -1, "__error__", "second error"),
		{TaskID: "task-1", TaskPath: "p", Idx: -3, Channel: "__interrupt__", Value: Typed("second interrupt")},
	}
	MustPutWrites(t, s, At(ref, "0001"), replaced...)
	want := append(replaced, NewWrite("task-2", -1, "__error__", "other task"))
	MustEqualTuple(t, MustGetTuple(t, s, ref), WantTuple(in, want...))
}

// testWritesOrder checks the order (task_path, task_id, idx), with idx
// compared as a number, whatever the order of the calls.
func testWritesOrder(t *testing.T, s saver.Store) {
	ref := NewRef()
	MustPutCheckpoint(t, s, NewCheckpoint(ref, "0001"))
	w := func(path, task string, idx int64) saver.Write {
		ch := "ch"
		for special, i := range saver.SpecialChannelIdx {
			if i == idx {
				ch = special // negative idx belongs to its special channel
			}
		}
		return saver.Write{TaskID: task, TaskPath: path, Idx: idx, Channel: ch, Value: Typed(path + "|" + task)}
	}
	calls := [][]saver.Write{
		{w("b", "t1", 10), w("b", "t1", 2)},
		{w("a", "t2", 0), w("", "t9", 0)},
		{w("b", "t1", -1), w("b", "t1", -3), w("b", "t0", 5)},
		{w("a", "t1", 1_000_000_000_000)},
		{w("a", "t1", 3), w("b", "t1", 0)},
	}
	for _, c := range calls {
		MustPutWrites(t, s, At(ref, "0001"), c...)
	}
	want := []saver.Write{
		w("", "t9", 0),
		w("a", "t1", 3), w("a", "t1", 1_000_000_000_000),
		w("a", "t2", 0),
		w("b", "t0", 5),
		w("b", "t1", -3), w("b", "t1", -1), w("b", "t1", 0), w("b", "t1", 2), w("b", "t1", 10),
	}
	got := MustGetTuple(t, s, ref).Writes
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("writes mismatch (-want +got):\n%s", diff)
	}
}

// testWritesBeforeCheckpoint covers async durability: writes for a
// checkpoint reach the store before the checkpoint's own put.
func testWritesBeforeCheckpoint(t *testing.T, s saver.Store) {
	ref := NewRef()
	writes := []saver.Write{NewWrite("task-1", 0, "ch", "early"), NewWrite("task-1", -1, "__error__", "e")}
	MustPutWrites(t, s, At(ref, "0001"), writes...)
	MustNotFind(t, s, ref)
	in := NewCheckpoint(ref, "0001")
	MustPutCheckpoint(t, s, in)
	MustEqualTuple(t, MustGetTuple(t, s, ref), WantTuple(in, writes...))
}

// testWritesPerCheckpoint checks that writes belong to one checkpoint: the
// next checkpoint starts with none.
func testWritesPerCheckpoint(t *testing.T, s saver.Store) {
	ref := NewRef()
	MustPutCheckpoint(t, s, NewCheckpoint(ref, "0001"))
	MustPutWrites(t, s, At(ref, "0001"), NewWrite("task-1", 0, "ch", "on 1"))
	next := NewCheckpoint(ref, "0002")
	next.ParentID = "0001"
	MustPutCheckpoint(t, s, next)
	MustPutWrites(t, s, At(ref, "00010"), NewWrite("task-1", 0, "ch", "on 00010"))

	if got := MustGetTuple(t, s, ref); len(got.Writes) != 0 {
		t.Fatalf("latest %s has writes %v, want none", got.ID, WriteValues(got))
	}
	if got, want := WriteValues(MustGetTuple(t, s, At(ref, "0001"))), []string{"task-1/0/ch=on 1"}; !cmp.Equal(got, want) {
		t.Fatalf("writes of 0001 = %v, want %v", got, want)
	}
}

func testWritesPerNamespace(t *testing.T, s saver.Store) {
	ref := NewRef()
	for _, ns := range []string{"", "child:1", "child:1|grand"} {
		MustPutCheckpoint(t, s, NewCheckpoint(InNS(ref, ns), "0001"))
		MustPutWrites(t, s, At(InNS(ref, ns), "0001"), NewWrite("task-1", 0, "ch", "in "+ns))
	}
	MustPutCheckpoint(t, s, NewCheckpoint(InNS(ref, "child"), "0001"))
	for ns, want := range map[string][]string{
		"":              {"task-1/0/ch=in "},
		"child:1":       {"task-1/0/ch=in child:1"},
		"child:1|grand": {"task-1/0/ch=in child:1|grand"},
		"child":         {},
	} {
		got := WriteValues(MustGetTuple(t, s, InNS(ref, ns)))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("writes in %q mismatch (-want +got):\n%s", ns, diff)
		}
	}
}

func testWritesPerThread(t *testing.T, s saver.Store) {
	a := NewRef()
	b := a
	b.ThreadID += "-b"
	for _, ref := range []saver.CheckpointRef{a, b} {
		MustPutCheckpoint(t, s, NewCheckpoint(ref, "0001"))
		MustPutWrites(t, s, At(ref, "0001"), NewWrite("task-1", 0, "ch", ref.ThreadID))
	}
	for _, ref := range []saver.CheckpointRef{a, b} {
		got := WriteValues(MustGetTuple(t, s, ref))
		if want := []string{"task-1/0/ch=" + ref.ThreadID}; !cmp.Equal(got, want) {
			t.Errorf("writes of %s = %v, want %v", ref.ThreadID, got, want)
		}
	}
}

// testWritesMany puts more writes than one request of some stores holds (a
// fan-out of 150 Sends, with an error alongside): all are read back, a
// replay keeps the first values of the ordinary writes and replaces the
// special one, and writes put on their own before are kept once.
func testWritesMany(t *testing.T, s saver.Store) {
	ref := NewRef()
	in := NewCheckpoint(ref, "0001")
	MustPutCheckpoint(t, s, in)
	many := func(label string) []saver.Write {
		var ws []saver.Write
		for i := range 150 {
			ws = append(ws, NewWrite("fan", int64(i), "ch", fmt.Sprintf("%s %d", label, i)))
		}
		return append(ws, NewWrite("fan", -1, "__error__", label+" error"))
	}
	early := NewWrite("fan", 7, "ch", "early 7")
	MustPutWrites(t, s, At(ref, "0001"), early)
	first := many("first")
	MustPutWrites(t, s, At(ref, "0001"), first...)
	want := append([]saver.Write{early}, first[:7]...)
	want = append(want, first[8:]...)
	MustEqualTuple(t, MustGetTuple(t, s, ref), WantTuple(in, want...))

	replay := many("replay")
	MustPutWrites(t, s, At(ref, "0001"), replay...)
	want[len(want)-1] = replay[len(replay)-1]
	MustEqualTuple(t, MustGetTuple(t, s, ref), WantTuple(in, want...))
	if got := MustList(t, s, saver.ListFilter{Tenant: ref.Tenant, ThreadID: ref.ThreadID}); len(got) != 1 || len(got[0].Writes) != len(want) {
		t.Fatalf("list: %d tuples, first with %d writes; want 1 with %d", len(got), len(got[0].Writes), len(want))
	}
	if ts, ok := s.(saver.TreeStore); ok {
		nodes, err := ts.ListNodes(t.Context(), ref.Tenant, ref.ThreadID)
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes) != 1 || !nodes[0].HasError {
			t.Fatalf("nodes = %+v; want one node with an error", nodes)
		}
	}
}
