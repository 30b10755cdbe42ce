package storetest

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/saver-dev/saver"
)

// A value that grows a little at each step, as a conversation's message
// list does, which a store may keep as patches on earlier versions: every
// version must still read back exactly, through every operation.
var growingTests = []test{
	{"EveryVersion", testGrowingEveryVersion},
	{"Fork", testGrowingFork},
	{"Prune", testGrowingPrune},
	{"Copy", testGrowingCopy},
	{"DeleteForRuns", testGrowingDeleteForRuns},
}

// growingText is the text the grown values are cut from.
var growingText = func() []byte {
	rng := rand.New(rand.NewPCG(7, 7))
	b := make([]byte, 128<<10)
	for i := range b {
		b[i] = 'a' + byte(rng.IntN(26))
	}
	return b
}()

// grown returns the value of the messages channel after n turns: a 3-byte
// header that counts them (as a msgpack array's does) and n KB of text,
// with a tail of its own.
func grown(n int, tail string) saver.Typed {
	data := []byte{0xdc, byte(n >> 8), byte(n)}
	data = append(data, growingText[:(n+4)<<10]...)
	return saver.Typed{Type: "msgpack", Data: append(data, tail...)}
}

// growPut puts checkpoint id with parent, the messages channel at version
// of value, and the context channel unchanged since version 1.
func growPut(t *testing.T, s saver.Store, ref saver.CheckpointRef, id, parent, version string, value saver.Typed, run string) saver.PutCheckpoint {
	in := NewCheckpoint(ref, id)
	in.ParentID = parent
	if run != "" {
		in.Metadata["run_id"] = run
	}
	in.ChannelVersions["context"] = "1"
	if id == "0001" {
		in.Blobs = append(in.Blobs, saver.Blob{Channel: "context", Version: "1", Value: grown(2, "context")})
	}
	in.ChannelVersions["messages"] = version
	in.Blobs = append(in.Blobs, saver.Blob{Channel: "messages", Version: version, Value: value})
	MustPutCheckpoint(t, s, in)
	return in
}

// growThread puts n checkpoints, each with the messages value grown by a
// turn, and returns them in order.
func growThread(t *testing.T, s saver.Store, ref saver.CheckpointRef, n int, run func(i int) string) []saver.PutCheckpoint {
	var puts []saver.PutCheckpoint
	parent := ""
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("%04d", i)
		in := growPut(t, s, ref, id, parent, fmt.Sprintf("%04d", i), grown(i, ""), run(i))
		puts = append(puts, in)
		parent = id
	}
	return puts
}

func noRun(int) string { return "" }

// wantGrown is the tuple a read of in returns: its own blobs, and the
// context blob of the first put.
func wantGrown(in saver.PutCheckpoint) *saver.Tuple {
	want := WantTuple(in)
	if in.ID != "0001" {
		want.Values = append([]saver.Blob{{Channel: "context", Version: "1", Value: grown(2, "context")}}, want.Values...)
	}
	return want
}

func mustReadGrown(t *testing.T, s saver.Store, ref saver.CheckpointRef, puts []saver.PutCheckpoint) {
	t.Helper()
	for _, in := range puts {
		MustEqualTuple(t, MustGetTuple(t, s, At(ref, in.ID)), wantGrown(in))
	}
	MustEqualTuple(t, MustGetTuple(t, s, ref), wantGrown(puts[len(puts)-1]))
	listed := MustList(t, s, saver.ListFilter{Tenant: ref.Tenant, ThreadID: ref.ThreadID, NS: &ref.NS})
	if len(listed) != len(puts) {
		t.Fatalf("list: %d checkpoints, want %d", len(listed), len(puts))
	}
	for i, got := range listed {
		MustEqualTuple(t, got, wantGrown(puts[len(puts)-1-i]))
	}
}

func testGrowingEveryVersion(t *testing.T, s saver.Store) {
	ref := NewRef()
	puts := growThread(t, s, ref, 40, noRun)
	mustReadGrown(t, s, ref, puts)
	// A put after a read of the latest, as a graph resumes.
	MustGetTuple(t, s, ref)
	puts = append(puts, growPut(t, s, ref, "0041", "0040", "0041", grown(41, ""), ""))
	mustReadGrown(t, s, ref, puts)
}

// testGrowingFork forks from the middle of the thread: the fork's value
// grows from an old version, then the main line goes on.
func testGrowingFork(t *testing.T, s saver.Store) {
	ref := NewRef()
	puts := growThread(t, s, ref, 20, noRun)
	fork := growPut(t, s, ref, "0021", "0010", "0011.fork", grown(11, "forked"), "")
	main := growPut(t, s, ref, "0022", "0020", "0022", grown(22, ""), "")
	mustReadGrown(t, s, ref, append(puts, fork, main))
}

func testGrowingPrune(t *testing.T, s saver.Store) {
	ref := NewRef()
	puts := growThread(t, s, ref, 30, noRun)
	if err := s.Prune(t.Context(), ref.Tenant, []string{ref.ThreadID}, saver.PruneKeepLatest); err != nil {
		t.Fatal(err)
	}
	last := puts[len(puts)-1]
	mustReadGrown(t, s, ref, []saver.PutCheckpoint{last})
	puts = []saver.PutCheckpoint{last, growPut(t, s, ref, "0031", "0030", "0031", grown(31, ""), "")}
	mustReadGrown(t, s, ref, puts)
}

func testGrowingCopy(t *testing.T, s saver.Store) {
	ref := NewRef()
	puts := growThread(t, s, ref, 25, noRun)
	dst := ref
	dst.ThreadID += "-copy"
	if err := s.CopyThread(t.Context(), ref.Tenant, ref.ThreadID, dst.ThreadID); err != nil {
		t.Fatal(err)
	}
	copied := make([]saver.PutCheckpoint, len(puts))
	for i, in := range puts {
		in.ThreadID = dst.ThreadID
		copied[i] = in
	}
	mustReadGrown(t, s, dst, copied)
	copied = append(copied, growPut(t, s, dst, "0026", "0025", "0026", grown(26, "copy"), ""))
	mustReadGrown(t, s, dst, copied)
	if err := s.DeleteThread(t.Context(), ref.Tenant, ref.ThreadID); err != nil {
		t.Fatal(err)
	}
	mustReadGrown(t, s, dst, copied)
}

// testGrowingDeleteForRuns deletes the checkpoints of the first run: those
// of the second, whose values grew from the first's, read as before.
func testGrowingDeleteForRuns(t *testing.T, s saver.Store) {
	ref := NewRef()
	first, second := "run-a-"+ref.ThreadID, "run-b-"+ref.ThreadID
	puts := growThread(t, s, ref, 24, func(i int) string {
		if i <= 12 {
			return first
		}
		return second
	})
	if err := s.DeleteForRuns(t.Context(), ref.Tenant, []string{first}); err != nil {
		t.Fatal(err)
	}
	mustReadGrown(t, s, ref, puts[12:])
}
