package storetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/saver-dev/saver"
)

var deltaTests = []test{
	{"Linear", testDeltaLinear},
	{"Latest", testDeltaLatest},
	{"NearestSeed", testDeltaNearestSeed},
	{"NoSeed", testDeltaNoSeed},
	{"PlainValueSeed", testDeltaPlainValueSeed},
	{"UnchangedVersionSeeds", testDeltaUnchangedVersionSeeds},
	{"Fork", testDeltaFork},
	{"SeveralChannels", testDeltaSeveralChannels},
	{"TaskPathOrder", testDeltaTaskPathOrder},
	{"ManyWrites", testDeltaManyWrites},
	{"LongChain", testDeltaLongChain},
	{"Pages", testDeltaPages},
	{"UnknownTarget", testDeltaUnknownTarget},
	{"NoChannels", testDeltaNoChannels},
	{"MissingParent", testDeltaMissingParent},
	{"ParentCycle", testDeltaParentCycle},
	{"Namespaces", testDeltaNamespaces},
	{"Known", testDeltaKnown},
}

// PutDelta puts checkpoint id with parent in ref's thread and namespace, with
// its channels given as "channel=version" (a version an earlier checkpoint
// brought) or "channel=version:value" (a new version and its blob; an
// empty value is an empty blob, which a DeltaChannel's version gets at
// every step that is not a snapshot). delta lists the DeltaChannels its
// metadata counts (saver.DeltaCountersKey), as LangGraph's would. It
// returns the put.
func PutDelta(tb testing.TB, s saver.Store, ref saver.CheckpointRef, id, parent string, channels []string, delta ...string) saver.PutCheckpoint {
	tb.Helper()
	in := NewCheckpoint(ref, id)
	in.ParentID = parent
	for _, c := range channels {
		ch, rest, ok := strings.Cut(c, "=")
		if !ok {
			tb.Fatalf("channel %q is not channel=version[:value]", c)
		}
		ver, value, brought := strings.Cut(rest, ":")
		in.ChannelVersions[ch] = ver
		switch {
		case !brought:
		case value == "":
			in.Blobs = append(in.Blobs, saver.Blob{Channel: ch, Version: ver, Value: saver.Typed{Type: saver.EmptyType, Data: []byte{}}})
		default:
			in.Blobs = append(in.Blobs, saver.Blob{Channel: ch, Version: ver, Value: Typed(value)})
		}
	}
	if len(delta) > 0 {
		counters := map[string]any{}
		for _, ch := range delta {
			counters[ch] = []any{int64(1), int64(1)}
		}
		in.Metadata[saver.DeltaCountersKey] = counters
	}
	MustPutCheckpoint(tb, s, in)
	return in
}

// DeltaWrite returns the write of value to channel by task, at idx 0.
func DeltaWrite(task, channel, value string) saver.Write {
	return NewWrite(task, 0, channel, value)
}

// MustDeltaHistory returns the histories of channels at ref's checkpoint.
func MustDeltaHistory(tb testing.TB, s saver.Store, ref saver.CheckpointRef, channels ...string) map[string]*saver.DeltaHistory {
	tb.Helper()
	in := saver.DeltaRequest{CheckpointRef: ref, Channels: channels}
	if err := in.Validate(); err != nil {
		tb.Fatalf("Validate(delta request): %v", err)
	}
	h, err := s.DeltaHistory(tb.Context(), in)
	if err != nil {
		tb.Fatalf("DeltaHistory(%+v): %v", in, err)
	}
	return h
}

// History is a delta history written compactly for comparison: the seed's
// payload text ("" with no seed) and each write as "task/idx/channel=value".
type History struct {
	Seed    string
	HasSeed bool
	Writes  []string
}

// Histories returns h compactly, by channel.
func Histories(h map[string]*saver.DeltaHistory) map[string]History {
	out := make(map[string]History, len(h))
	for ch, dh := range h {
		c := History{Writes: WriteValues(&saver.Tuple{Writes: dh.Writes})}
		if dh.Seed != nil {
			c.Seed, c.HasSeed = string(dh.Seed.Data), true
		}
		out[ch] = c
	}
	return out
}

// MustEqualHistory fails unless the histories of channels at ref are want.
func MustEqualHistory(tb testing.TB, s saver.Store, ref saver.CheckpointRef, want map[string]History) {
	tb.Helper()
	channels := make([]string, 0, len(want))
	for ch := range want {
		channels = append(channels, ch)
	}
	got := Histories(MustDeltaHistory(tb, s, ref, channels...))
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		tb.Fatalf("delta history at %s/%q/%s mismatch (-want +got):\n%s", ref.ThreadID, ref.NS, ref.ID, diff)
	}
}

// seeded is a History with a seed.
func seeded(seed string, writes ...string) History {
	return History{Seed: seed, HasSeed: true, Writes: writes}
}

// unseeded is a History that walked to the root.
func unseeded(writes ...string) History { return History{Writes: writes} }

// PutChat puts a chat thread of n checkpoints 0001..n in ref's namespace,
// each the parent of the next (ids of four digits and more): "messages" is a DeltaChannel with a
// snapshot ("S<i>") at the checkpoints in snapshots and an empty blob at
// the others, and every checkpoint carries one write "m<i>" to it.
func PutChat(t testing.TB, s saver.Store, ref saver.CheckpointRef, n int, snapshots ...int) []saver.PutCheckpoint {
	t.Helper()
	snap := map[int]bool{}
	for _, i := range snapshots {
		snap[i] = true
	}
	var puts []saver.PutCheckpoint
	parent := ""
	for i := 1; i <= n; i++ {
		id, value := fmt.Sprintf("%04d", i), ""
		if snap[i] {
			value = fmt.Sprint("S", i)
		}
		var delta []string
		if !snap[i] {
			delta = []string{"messages"}
		}
		puts = append(puts, PutDelta(t, s, ref, id, parent, []string{fmt.Sprintf("messages=%d:%s", i, value)}, delta...))
		MustPutWrites(t, s, At(ref, id), DeltaWrite("task", "messages", fmt.Sprint("m", i)))
		parent = id
	}
	return puts
}

// PutChatTurns goes on with a chat PutChat put: checkpoints from..to, each
// the child of the one before, with no snapshot.
func PutChatTurns(t testing.TB, s saver.Store, ref saver.CheckpointRef, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		id := fmt.Sprintf("%04d", i)
		PutDelta(t, s, ref, id, fmt.Sprintf("%04d", i-1), []string{fmt.Sprintf("messages=%d:", i)}, "messages")
		MustPutWrites(t, s, At(ref, id), DeltaWrite("task", "messages", fmt.Sprint("m", i)))
	}
}

// ChatWrites returns the History writes of PutChat's checkpoints from..to.
func ChatWrites(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("task/0/messages=m%d", i))
	}
	return out
}

// testDeltaLinear walks a chain to its seed: the seed's own writes are in
// the history, the target's are not.
func testDeltaLinear(t *testing.T, s saver.Store) {
	ref := NewRef()
	PutChat(t, s, ref, 4, 1)
	MustEqualHistory(t, s, At(ref, "0004"), map[string]History{"messages": seeded("S1", ChatWrites(1, 3)...)})
	MustEqualHistory(t, s, At(ref, "0002"), map[string]History{"messages": seeded("S1", ChatWrites(1, 1)...)})
	// A seed at the target itself does not end the walk: the walk starts
	// at the parent.
	MustEqualHistory(t, s, At(ref, "0001"), map[string]History{"messages": unseeded()})
}

// testDeltaLatest answers for the latest checkpoint when no id is given.
func testDeltaLatest(t *testing.T, s saver.Store) {
	ref := NewRef()
	PutChat(t, s, ref, 5, 2)
	MustEqualHistory(t, s, ref, map[string]History{"messages": seeded("S2", ChatWrites(2, 4)...)})
}

// testDeltaNearestSeed stops at the nearest of several snapshots.
func testDeltaNearestSeed(t *testing.T, s saver.Store) {
	ref := NewRef()
	PutChat(t, s, ref, 8, 1, 3, 6)
	MustEqualHistory(t, s, At(ref, "0008"), map[string]History{"messages": seeded("S6", ChatWrites(6, 7)...)})
	MustEqualHistory(t, s, At(ref, "0006"), map[string]History{"messages": seeded("S3", ChatWrites(3, 5)...)})
	MustEqualHistory(t, s, At(ref, "0007"), map[string]History{"messages": seeded("S6", ChatWrites(6, 6)...)})
}

// testDeltaNoSeed walks to the root when no ancestor holds a value.
func testDeltaNoSeed(t *testing.T, s saver.Store) {
	ref := NewRef()
	PutChat(t, s, ref, 5)
	MustEqualHistory(t, s, At(ref, "0005"), map[string]History{"messages": unseeded(ChatWrites(1, 4)...)})
}

// testDeltaPlainValueSeed takes any stored value for a seed, whatever its
// type: a plain value from before the channel became a DeltaChannel.
func testDeltaPlainValueSeed(t *testing.T, s saver.Store) {
	ref := NewRef()
	in := NewCheckpoint(ref, "0001")
	in.ChannelVersions["messages"] = "1"
	in.Blobs = []saver.Blob{{Channel: "messages", Version: "1", Value: saver.Typed{Type: "json", Data: []byte(`["old"]`)}}}
	MustPutCheckpoint(t, s, in)
	MustPutWrites(t, s, At(ref, "0001"), DeltaWrite("task", "messages", "m1"))
	PutDelta(t, s, ref, "0002", "0001", []string{"messages=2:"}, "messages")
	MustPutWrites(t, s, At(ref, "0002"), DeltaWrite("task", "messages", "m2"))
	PutDelta(t, s, ref, "0003", "0002", []string{"messages=3:"}, "messages")
	h := MustDeltaHistory(t, s, At(ref, "0003"), "messages")["messages"]
	if h.Seed == nil || h.Seed.Type != "json" || string(h.Seed.Data) != `["old"]` {
		t.Fatalf("seed = %+v, want the plain json value", h.Seed)
	}
	if got, want := WriteValues(&saver.Tuple{Writes: h.Writes}), ChatWrites(1, 2); !cmp.Equal(got, want) {
		t.Fatalf("writes = %v, want %v", got, want)
	}
}

// testDeltaUnchangedVersionSeeds finds the seed through a version the
// ancestor did not bring: a channel not updated at a step keeps the
// version, and so the value, of an earlier checkpoint.
func testDeltaUnchangedVersionSeeds(t *testing.T, s saver.Store) {
	ref := NewRef()
	PutDelta(t, s, ref, "0001", "", []string{"messages=1:S1", "other=1:o"})
	MustPutWrites(t, s, At(ref, "0001"), DeltaWrite("task", "other", "o1"))
	PutDelta(t, s, ref, "0002", "0001", []string{"messages=1", "other=2:"}, "messages", "other")
	MustPutWrites(t, s, At(ref, "0002"), DeltaWrite("task", "messages", "m2"), saver.Write{TaskID: "task", Idx: 1, Channel: "other", Value: Typed("o2")})
	PutDelta(t, s, ref, "0003", "0002", []string{"messages=3:", "other=2"}, "messages", "other")
	MustEqualHistory(t, s, At(ref, "0003"), map[string]History{
		// 0002 holds messages at version 1, brought by 0001: it is the seed.
		"messages": seeded("S1", "task/0/messages=m2"),
		// other at 0002 is its empty version 2: the walk goes on to 0001.
		"other": seeded("o", "task/0/other=o1", "task/1/other=o2"),
	})
}

// testDeltaFork follows the parent chain, never the id order: a fork's
// other branch contributes nothing.
func testDeltaFork(t *testing.T, s saver.Store) {
	ref := NewRef()
	PutChat(t, s, ref, 3, 1)
	PutDelta(t, s, ref, "0004", "0002", []string{"messages=4:"}, "messages")
	MustPutWrites(t, s, At(ref, "0004"), DeltaWrite("task", "messages", "fork"))
	PutDelta(t, s, ref, "0005", "0004", []string{"messages=5:"}, "messages")
	MustEqualHistory(t, s, At(ref, "0005"), map[string]History{
		"messages": seeded("S1", "task/0/messages=m1", "task/0/messages=m2", "task/0/messages=fork"),
	})
	MustEqualHistory(t, s, At(ref, "0003"), map[string]History{"messages": seeded("S1", ChatWrites(1, 2)...)})
}

// testDeltaSeveralChannels walks each channel to its own seed in one call.
func testDeltaSeveralChannels(t *testing.T, s saver.Store) {
	ref := NewRef()
	PutDelta(t, s, ref, "0001", "", []string{"a=1:", "b=1:B1", "c=1:"})
	MustPutWrites(t, s, At(ref, "0001"), DeltaWrite("t1", "a", "a1"), saver.Write{TaskID: "t1", Idx: 1, Channel: "b", Value: Typed("b1")}, saver.Write{TaskID: "t1", Idx: 2, Channel: "c", Value: Typed("c1")})
	PutDelta(t, s, ref, "0002", "0001", []string{"a=2:A2", "b=2:", "c=2:"}, "b", "c")
	MustPutWrites(t, s, At(ref, "0002"), DeltaWrite("t2", "a", "a2"), saver.Write{TaskID: "t2", Idx: 1, Channel: "b", Value: Typed("b2")}, saver.Write{TaskID: "t2", Idx: 2, Channel: "d", Value: Typed("d2")})
	PutDelta(t, s, ref, "0003", "0002", []string{"a=3:", "b=3:", "c=3:"}, "a", "b", "c")
	MustPutWrites(t, s, At(ref, "0003"), DeltaWrite("t3", "a", "a3"))
	PutDelta(t, s, ref, "0004", "0003", []string{"a=4:", "b=4:", "c=4:"}, "a", "b", "c")
	MustEqualHistory(t, s, At(ref, "0004"), map[string]History{
		"a":       seeded("A2", "t2/0/a=a2", "t3/0/a=a3"),
		"b":       seeded("B1", "t1/1/b=b1", "t2/1/b=b2"),
		"c":       unseeded("t1/2/c=c1"),
		"d":       unseeded("t2/2/d=d2"),
		"missing": unseeded(),
	})
}

// testDeltaTaskPathOrder orders each checkpoint's writes as get_tuple does:
// task path, task id, idx; so parallel tasks replay in their live order.
func testDeltaTaskPathOrder(t *testing.T, s saver.Store) {
	ref := NewRef()
	PutDelta(t, s, ref, "0001", "", []string{"messages=1:"})
	w := func(task, path string, idx int64, v string) saver.Write {
		return saver.Write{TaskID: task, TaskPath: path, Idx: idx, Channel: "messages", Value: Typed(v)}
	}
	MustPutWrites(t, s, At(ref, "0001"), w("task-z", "~__pregel_pull, a", 0, "a0"), w("task-z", "~__pregel_pull, a", 1, "a1"))
	MustPutWrites(t, s, At(ref, "0001"), w("task-a", "~__pregel_pull, b", 0, "b0"))
	MustPutWrites(t, s, At(ref, "0001"), w("input", "", 0, "in"))
	PutDelta(t, s, ref, "0002", "0001", []string{"messages=2:"}, "messages")
	MustEqualHistory(t, s, At(ref, "0002"), map[string]History{
		"messages": unseeded("input/0/messages=in", "task-z/0/messages=a0", "task-z/1/messages=a1", "task-a/0/messages=b0"),
	})
}

// testDeltaManyWrites reads an ancestor whose writes came in one call too
// large for some stores to store as separate items (a Send fan-out).
func testDeltaManyWrites(t *testing.T, s saver.Store) {
	ref := NewRef()
	PutDelta(t, s, ref, "0001", "", []string{"messages=1:S"})
	var writes []saver.Write
	var want []string
	for i := range 150 {
		writes = append(writes, saver.Write{TaskID: "fan", Idx: int64(i), Channel: "messages", Value: Typed(fmt.Sprint("w", i))})
	}
	writes = append(writes, NewWrite("fan", -1, saver.ChannelError, "boom"))
	MustPutWrites(t, s, At(ref, "0001"), writes...)
	for i := range 150 {
		want = append(want, fmt.Sprintf("fan/%d/messages=w%d", i, i))
	}
	PutDelta(t, s, ref, "0002", "0001", []string{"messages=2:"}, "messages")
	MustEqualHistory(t, s, At(ref, "0002"), map[string]History{"messages": seeded("S", want...), saver.ChannelError: unseeded("fan/-1/__error__=boom")})
}

// testDeltaLongChain walks a chain longer than one read of some stores,
// with bodies large enough to need several.
func testDeltaLongChain(t *testing.T, s saver.Store) {
	ref := NewRef()
	body := strings.Repeat("x", 8<<10)
	parent := ""
	var want []string
	for i := 1; i <= 250; i++ {
		id, value := fmt.Sprintf("%04d", i), ""
		if i == 10 {
			value = "S10"
		}
		in := NewCheckpoint(ref, id)
		in.ParentID = parent
		in.Body = Typed(body)
		in.ChannelVersions["messages"] = fmt.Sprint(i)
		in.Blobs = []saver.Blob{{Channel: "messages", Version: fmt.Sprint(i), Value: saver.Typed{Type: saver.EmptyType, Data: []byte{}}}}
		if value != "" {
			in.Blobs[0].Value = Typed(value)
		}
		MustPutCheckpoint(t, s, in)
		MustPutWrites(t, s, At(ref, id), DeltaWrite("task", "messages", fmt.Sprint("m", i)))
		if i >= 10 && i < 250 {
			want = append(want, fmt.Sprintf("task/0/messages=m%d", i))
		}
		parent = id
	}
	MustEqualHistory(t, s, At(ref, "0250"), map[string]History{"messages": seeded("S10", want...)})
}

// PagedDeltaHistory reads the histories of channels at ref's checkpoint
// in pages of maxBytes, as the clients do: each unfinished channel's Next
// is the target of the next request for it, whose history comes before.
// It returns the whole histories and the number of requests.
func PagedDeltaHistory(tb testing.TB, s saver.Store, ref saver.CheckpointRef, maxBytes int64, channels ...string) (map[string]*saver.DeltaHistory, int) {
	tb.Helper()
	out := map[string]*saver.DeltaHistory{}
	requests := 0
	for len(channels) > 0 {
		in := saver.DeltaRequest{CheckpointRef: ref, Channels: channels, MaxBytes: maxBytes}
		h, err := s.DeltaHistory(tb.Context(), in)
		if err != nil {
			tb.Fatalf("DeltaHistory(%+v): %v", in, err)
		}
		requests++
		channels = nil
		for ch, page := range h {
			whole := out[ch]
			if whole == nil {
				whole = &saver.DeltaHistory{}
				out[ch] = whole
			}
			whole.Writes = append(page.Writes, whole.Writes...)
			whole.Seed = page.Seed
			if page.Next != "" {
				if len(channels) > 0 && page.Next != ref.ID {
					tb.Fatalf("one page continues at %s and %s", ref.ID, page.Next)
				}
				channels, ref.ID = append(channels, ch), page.Next
			}
		}
	}
	return out, requests
}

// testDeltaPages reads a history in pages of a few writes: together they
// are the whole, and a page over the history is the one request.
func testDeltaPages(t *testing.T, s saver.Store) {
	ref := NewRef()
	value := strings.Repeat("v", 1000)
	parent := ""
	for i := 1; i <= 30; i++ {
		id := fmt.Sprintf("%04d", i)
		a := fmt.Sprintf("a=%d:", i)
		if i == 5 {
			a += "A5"
		}
		PutDelta(t, s, ref, id, parent, []string{a, fmt.Sprintf("b=%d:", i)}, "a", "b")
		MustPutWrites(t, s, At(ref, id), DeltaWrite("t", "a", fmt.Sprint("a", i, value)),
			saver.Write{TaskID: "t", Idx: 1, Channel: "b", Value: Typed(fmt.Sprint("b", i, value))})
		parent = id
	}
	target := At(ref, "0030")
	h := MustDeltaHistory(t, s, target, "a", "b")
	whole := Histories(h)
	if got := len(whole["b"].Writes); got != 29 {
		t.Fatalf("whole history of b: %d writes, want 29", got)
	}
	var size, ancestor int64 // all writes and seeds; an ancestor's writes at most
	for _, dh := range h {
		for i := range dh.Writes {
			size += dh.Writes[i].Size()
			ancestor = max(ancestor, 2*dh.Writes[i].Size())
		}
		if dh.Seed != nil {
			size += dh.Seed.Size()
		}
	}
	for _, maxBytes := range []int64{1, 2500, 10000, 1 << 20} {
		paged, requests := PagedDeltaHistory(t, s, target, maxBytes, "a", "b")
		if diff := cmp.Diff(whole, Histories(paged), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("pages of %d bytes differ from the whole history (-whole +pages):\n%s", maxBytes, diff)
		}
		// A page ends after the ancestor that reaches maxBytes.
		if least := size / (maxBytes + ancestor); maxBytes < size && int64(requests) <= least {
			t.Errorf("pages of %d bytes: %d requests for %d bytes, want more than %d", maxBytes, requests, size, least)
		}
		if maxBytes > size && requests != 1 {
			t.Errorf("pages of %d bytes: %d requests for %d bytes, want 1", maxBytes, requests, size)
		}
	}
}

// testDeltaUnknownTarget answers empty histories, as the base class does.
func testDeltaUnknownTarget(t *testing.T, s saver.Store) {
	ref := NewRef()
	MustEqualHistory(t, s, ref, map[string]History{"messages": unseeded()})
	PutChat(t, s, ref, 2, 1)
	MustEqualHistory(t, s, At(ref, "0009"), map[string]History{"messages": unseeded()})
	MustEqualHistory(t, s, InNS(ref, "other"), map[string]History{"messages": unseeded()})
}

// testDeltaNoChannels answers an empty mapping.
func testDeltaNoChannels(t *testing.T, s saver.Store) {
	ref := NewRef()
	PutChat(t, s, ref, 2, 1)
	if got := MustDeltaHistory(t, s, At(ref, "0002")); len(got) != 0 {
		t.Fatalf("histories = %v, want none", got)
	}
}

// testDeltaMissingParent ends the walk at a parent that is not stored.
func testDeltaMissingParent(t *testing.T, s saver.Store) {
	ref := NewRef()
	PutDelta(t, s, ref, "0002", "0001", []string{"messages=2:"}, "messages")
	MustPutWrites(t, s, At(ref, "0002"), DeltaWrite("task", "messages", "m2"))
	MustPutWrites(t, s, At(ref, "0001"), DeltaWrite("task", "messages", "never put"))
	PutDelta(t, s, ref, "0003", "0002", []string{"messages=3:"}, "messages")
	MustEqualHistory(t, s, At(ref, "0003"), map[string]History{"messages": unseeded("task/0/messages=m2")})
}

// testDeltaParentCycle ends the walk where parent links loop back, which
// only ids that LangGraph would never make can do, visiting each once.
func testDeltaParentCycle(t *testing.T, s saver.Store) {
	ref := NewRef()
	PutDelta(t, s, ref, "0001", "0002", []string{"messages=1:"}, "messages")
	MustPutWrites(t, s, At(ref, "0001"), DeltaWrite("task", "messages", "m1"))
	PutDelta(t, s, ref, "0002", "0001", []string{"messages=2:"}, "messages")
	MustPutWrites(t, s, At(ref, "0002"), DeltaWrite("task", "messages", "m2"))
	PutDelta(t, s, ref, "0003", "0002", []string{"messages=3:"}, "messages")
	MustEqualHistory(t, s, At(ref, "0003"), map[string]History{"messages": unseeded("task/0/messages=m1", "task/0/messages=m2")})
}

// testDeltaNamespaces keeps each namespace's chain to itself, and threads
// and tenants apart.
func testDeltaNamespaces(t *testing.T, s saver.Store) {
	ref := NewRef()
	PutChat(t, s, ref, 3, 1)
	sub := InNS(ref, "sub:1")
	PutDelta(t, s, sub, "0001", "", []string{"messages=1:X"})
	MustPutWrites(t, s, At(sub, "0001"), DeltaWrite("task", "messages", "sub"))
	PutDelta(t, s, sub, "0004", "0001", []string{"messages=4:"}, "messages")
	MustEqualHistory(t, s, At(sub, "0004"), map[string]History{"messages": seeded("X", "task/0/messages=sub")})
	MustEqualHistory(t, s, At(ref, "0003"), map[string]History{"messages": seeded("S1", ChatWrites(1, 2)...)})
	other := ref
	other.Tenant = NewTenant()
	MustEqualHistory(t, s, At(other, "0003"), map[string]History{"messages": unseeded()})
}
