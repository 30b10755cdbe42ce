package storetest

import (
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver"
)

var putGetTests = []test{
	{"RoundTrip", testRoundTrip},
	{"MetadataTypes", testMetadataTypes},
	{"LatestIsLargestID", testLatestIsLargestID},
	{"GetByID", testGetByID},
	{"NotFound", testNotFound},
	{"Upsert", testUpsert},
	{"ParentLink", testParentLink},
	{"Namespaces", testNamespaces},
}

// testRoundTrip puts a checkpoint with every field set and reads back exactly
// what was put, by id and as the latest.
func testRoundTrip(t *testing.T, s saver.Store) {
	ref := NewRef()
	in := NewCheckpoint(ref, "1ef4f797-8335-6428-8001-8a1503f9b875")
	in.ParentID = "1ef4f797-8335-6428-8000-000000000000"
	in.Body = saver.Typed{Type: "msgpack", Data: []byte{0x00, 0x01, 0xff, 0x80, 'v', 0x00}}
	in.Metadata = saver.Metadata{
		"source":  "loop",
		"step":    int64(-1),
		"run_id":  "run-1",
		"parents": map[string]any{"": "1ef4f797", "child:1": "1ef4f798"},
		"tags":    []any{"a", int64(1), 2.5, true, nil},
	}
	SetChannel(&in, "messages", "00000000000000000000000000000002.0.243", "hello")
	SetChannel(&in, "ünïcode channel", "1", "wörld")
	in.Blobs = append(in.Blobs, saver.Blob{Channel: "branch:to:node", Version: "3", Value: saver.Typed{Type: "bytes", Data: []byte{}}})
	in.ChannelVersions["branch:to:node"] = "3"
	MustPutCheckpoint(t, s, in)

	want := WantTuple(in)
	MustEqualTuple(t, MustGetTuple(t, s, At(ref, in.ID)), want)
	MustEqualTuple(t, MustGetTuple(t, s, ref), want)
}

// testMetadataTypes checks that metadata values keep their JSON types: an
// integer stays an integer and a float stays a float, even when whole.
func testMetadataTypes(t *testing.T, s saver.Store) {
	md := saver.Metadata{
		"int":       int64(1),
		"zero":      int64(0),
		"negative":  int64(-42),
		"max":       int64(math.MaxInt64),
		"min":       int64(math.MinInt64),
		"float":     0.5,
		"wholeflt":  1.0,
		"negflt":    -2.0,
		"bigflt":    1e300,
		"string":    "s",
		"empty":     "",
		"true":      true,
		"false":     false,
		"null":      nil,
		"list":      []any{int64(1), 1.0, "1", []any{}, map[string]any{}},
		"emptylist": []any{},
		"map":       map[string]any{"nested": map[string]any{"deep": int64(3), "f": 3.0}},
		"emptymap":  map[string]any{},
		"":          "empty key",
	}
	ref := NewRef()
	in := NewCheckpoint(ref, "1")
	in.Metadata = md
	MustPutCheckpoint(t, s, in)

	got := MustGetTuple(t, s, At(ref, "1")).Metadata
	// EquateEmpty is not used here: an empty list must not come back as nil.
	if diff := cmp.Diff(md, got); diff != "" {
		t.Fatalf("metadata mismatch (-want +got):\n%s", diff)
	}
}

func testLatestIsLargestID(t *testing.T, s saver.Store) {
	tests := []struct {
		name string
		ids  []string // in insertion order
	}{
		{"Ascending", []string{"0001", "0002", "0003"}},
		{"Descending", []string{"0003", "0002", "0001"}},
		{"Shuffled", []string{"0002", "0004", "0001", "0003"}},
		{"StringNotNumber", []string{"9", "10", "100"}},
		{"Prefixes", []string{"1", "10", "1\x00", "1\x00\x00", "1\x01", "09"}},
		{"UUID6", []string{
			"1ef4f797-8335-6428-8001-8a1503f9b875",
			"1ef4f797-8335-6428-8002-8a1503f9b875",
			"1ef4f796-ffff-6428-8003-8a1503f9b875",
		}},
		{"Single", []string{"only"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := NewRef()
			for _, id := range tt.ids {
				MustPutCheckpoint(t, s, NewCheckpoint(ref, id))
			}
			if got, want := MustGetTuple(t, s, ref).ID, slices.Max(tt.ids); got != want {
				t.Fatalf("latest = %q, want %q", got, want)
			}
		})
	}
}

func testGetByID(t *testing.T, s saver.Store) {
	ref := NewRef()
	ids := []string{"0001", "0002", "0003"}
	for i, id := range ids {
		in := NewCheckpoint(ref, id)
		in.Metadata["step"] = int64(i)
		MustPutCheckpoint(t, s, in)
	}
	for i, id := range ids {
		tup := MustGetTuple(t, s, At(ref, id))
		if got, want := tup.ID, id; got != want {
			t.Fatalf("GetTuple(%s).ID = %q", id, got)
		}
		if got, want := tup.Metadata["step"], int64(i); got != want {
			t.Fatalf("GetTuple(%s) step = %v, want %v", id, got, want)
		}
		if got, want := string(tup.Body.Data), "checkpoint "+id; got != want {
			t.Fatalf("GetTuple(%s) body = %q, want %q", id, got, want)
		}
	}
}

func testNotFound(t *testing.T, s saver.Store) {
	ref := NewRef()
	MustPutCheckpoint(t, s, NewCheckpoint(ref, "0002"))
	MustPutWrites(t, s, At(ref, "0003"), NewWrite("task", 0, "ch", "orphan"))

	tests := []struct {
		name string
		ref  saver.CheckpointRef
	}{
		{"UnknownThreadLatest", saver.CheckpointRef{Tenant: ref.Tenant, ThreadID: "no-such-thread"}},
		{"UnknownThreadByID", saver.CheckpointRef{Tenant: ref.Tenant, ThreadID: "no-such-thread", ID: "0002"}},
		{"UnknownTenant", saver.CheckpointRef{Tenant: NewTenant(), ThreadID: ref.ThreadID}},
		{"UnknownID", At(ref, "0001")},
		{"IDPrefix", At(ref, "000")},
		{"IDExtension", At(ref, "00020")},
		{"OnlyWrites", At(ref, "0003")},
		{"UnknownNamespace", InNS(ref, "child:1")},
		{"UnknownNamespaceByID", At(InNS(ref, "child:1"), "0002")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { MustNotFind(t, s, tt.ref) })
	}
}

// testUpsert re-puts a checkpoint (as exit durability does) and expects one
// checkpoint holding the second put's body, metadata and versions.
func testUpsert(t *testing.T, s saver.Store) {
	ref := NewRef()
	first := NewCheckpoint(ref, "0001")
	first.Metadata["step"] = int64(1)
	SetChannel(&first, "a", "1", "a1")
	SetChannel(&first, "b", "1", "b1")
	MustPutCheckpoint(t, s, first)
	MustPutWrites(t, s, At(ref, "0001"), NewWrite("task", 0, "ch", "kept"))

	second := NewCheckpoint(ref, "0001")
	second.Body = Typed("second body")
	second.Metadata = saver.Metadata{"source": "exit", "step": int64(2)}
	second.ChannelVersions["a"] = "1"
	SetChannel(&second, "c", "1", "c1")
	MustPutCheckpoint(t, s, second)

	got := MustListThread(t, s, ref.Tenant, ref.ThreadID)
	if len(got) != 1 {
		t.Fatalf("after re-put, list has %d checkpoints %v, want 1", len(got), IDs(got))
	}
	want := WantTuple(second, NewWrite("task", 0, "ch", "kept"))
	want.Values = []saver.Blob{first.Blobs[0], second.Blobs[0]}
	MustEqualTuple(t, got[0], want)
	MustEqualTuple(t, MustGetTuple(t, s, ref), want)
}

func testParentLink(t *testing.T, s saver.Store) {
	ref := NewRef()
	root := NewCheckpoint(ref, "0001")
	child := NewCheckpoint(ref, "0002")
	child.ParentID = "0001"
	fork := NewCheckpoint(ref, "0003")
	fork.ParentID = "0001"
	orphan := NewCheckpoint(ref, "0004")
	orphan.ParentID = "not-stored"
	for _, in := range []saver.PutCheckpoint{root, child, fork, orphan} {
		MustPutCheckpoint(t, s, in)
	}
	want := map[string]string{"0001": "", "0002": "0001", "0003": "0001", "0004": "not-stored"}
	for id, parent := range want {
		if got := MustGetTuple(t, s, At(ref, id)).ParentID; got != parent {
			t.Errorf("ParentID of %s = %q, want %q", id, got, parent)
		}
	}
}

// testNamespaces puts the same checkpoint ids in several namespaces of one
// thread; each namespace sees only its own.
func testNamespaces(t *testing.T, s saver.Store) {
	ref := NewRef()
	namespaces := []string{"", "child:1", "child:1|grand:2", "child", "child:10"}
	for i, ns := range namespaces {
		for _, id := range []string{"0001", "0002"} {
			in := NewCheckpoint(InNS(ref, ns), id)
			in.Body = Typed(ns + "@" + id)
			SetChannel(&in, "ch", "1", "value in "+ns)
			MustPutCheckpoint(t, s, in)
		}
		// A later checkpoint in one namespace must not become another's latest.
		if i == 1 {
			MustPutCheckpoint(t, s, NewCheckpoint(InNS(ref, ns), "0009"))
		}
	}
	for i, ns := range namespaces {
		latest := "0002"
		if i == 1 {
			latest = "0009"
		}
		if got := MustGetTuple(t, s, InNS(ref, ns)).ID; got != latest {
			t.Errorf("latest in %q = %s, want %s", ns, got, latest)
		}
		tup := MustGetTuple(t, s, At(InNS(ref, ns), "0001"))
		if got, want := tup.NS, ns; got != want {
			t.Errorf("NS = %q, want %q", got, want)
		}
		if got, want := string(tup.Body.Data), ns+"@0001"; got != want {
			t.Errorf("body in %q = %q, want %q", ns, got, want)
		}
		if got, want := Values(tup)["ch"], "value in "+ns; got != want {
			t.Errorf("value in %q = %q, want %q", ns, got, want)
		}
	}
}

var blobTests = []test{
	{"Resolution", testBlobResolution},
}

// testBlobResolution covers how values are resolved: through each
// checkpoint's own channel versions, from blobs written by any earlier put.
func testBlobResolution(t *testing.T, s saver.Store) {
	type put struct {
		ns       string
		id       string
		versions map[string]string
		blobs    []saver.Blob // new_versions
	}
	blob := func(ch, v, val string) saver.Blob {
		return saver.Blob{Channel: ch, Version: v, Value: Typed(val)}
	}
	empty := func(ch, v string) saver.Blob {
		return saver.Blob{Channel: ch, Version: v, Value: saver.Typed{Type: saver.EmptyType}}
	}
	tests := []struct {
		name string
		puts []put
		want map[string]map[string]string // "ns/id" -> values
	}{{
		name: "IncrementalUpdate",
		puts: []put{
			{"", "1", map[string]string{"a": "1", "b": "1"}, []saver.Blob{blob("a", "1", "v1"), blob("b", "1", "v2")}},
			{"", "2", map[string]string{"a": "2", "b": "1"}, []saver.Blob{blob("a", "2", "v1 updated")}},
		},
		want: map[string]map[string]string{
			"/1": {"a": "v1", "b": "v2"},
			"/2": {"a": "v1 updated", "b": "v2"},
		},
	}, {
		name: "ChannelAdded",
		puts: []put{
			{"", "1", map[string]string{"a": "1"}, []saver.Blob{blob("a", "1", "a")}},
			{"", "2", map[string]string{"a": "1", "b": "1"}, []saver.Blob{blob("b", "1", "b")}},
		},
		want: map[string]map[string]string{"/1": {"a": "a"}, "/2": {"a": "a", "b": "b"}},
	}, {
		name: "ChannelRemoved",
		puts: []put{
			{"", "1", map[string]string{"a": "1", "b": "1"}, []saver.Blob{blob("a", "1", "a"), blob("b", "1", "b")}},
			{"", "2", map[string]string{"a": "2"}, []saver.Blob{blob("a", "2", "a2")}},
		},
		want: map[string]map[string]string{"/1": {"a": "a", "b": "b"}, "/2": {"a": "a2"}},
	}, {
		name: "EmptySkipped",
		puts: []put{
			{"", "1", map[string]string{"a": "1", "b": "1"}, []saver.Blob{blob("a", "1", "a"), empty("b", "1")}},
			{"", "2", map[string]string{"a": "2", "b": "1"}, []saver.Blob{empty("a", "2")}},
		},
		want: map[string]map[string]string{"/1": {"a": "a"}, "/2": {}},
	}, {
		name: "MissingSkipped",
		puts: []put{
			{"", "1", map[string]string{"a": "1", "gone": "7"}, []saver.Blob{blob("a", "1", "a")}},
		},
		want: map[string]map[string]string{"/1": {"a": "a"}},
	}, {
		name: "NoChannels",
		puts: []put{{"", "1", nil, nil}},
		want: map[string]map[string]string{"/1": {}},
	}, {
		name: "InsertIfAbsent",
		puts: []put{
			{"", "1", map[string]string{"a": "1"}, []saver.Blob{blob("a", "1", "first")}},
			{"", "2", map[string]string{"a": "1"}, []saver.Blob{blob("a", "1", "second")}},
			{"", "1", map[string]string{"a": "1"}, []saver.Blob{blob("a", "1", "third")}},
		},
		want: map[string]map[string]string{"/1": {"a": "first"}, "/2": {"a": "first"}},
	}, {
		name: "EmptyDoesNotReplaceValue",
		puts: []put{
			{"", "1", map[string]string{"a": "1"}, []saver.Blob{blob("a", "1", "value")}},
			{"", "2", map[string]string{"a": "1"}, []saver.Blob{empty("a", "1")}},
		},
		want: map[string]map[string]string{"/1": {"a": "value"}, "/2": {"a": "value"}},
	}, {
		name: "ExactVersionMatch",
		puts: []put{
			{"", "1", map[string]string{"a": "1"}, []saver.Blob{blob("a", "1", "one")}},
			{"", "2", map[string]string{"a": "1.0"}, []saver.Blob{blob("a", "1.0", "one point oh")}},
			{"", "3", map[string]string{"a": "10"}, nil},
		},
		want: map[string]map[string]string{
			"/1": {"a": "one"}, "/2": {"a": "one point oh"}, "/3": {},
		},
	}, {
		name: "NamespacesIsolated",
		puts: []put{
			{"", "1", map[string]string{"a": "1"}, []saver.Blob{blob("a", "1", "root")}},
			{"child:1", "1", map[string]string{"a": "1"}, []saver.Blob{blob("a", "1", "child")}},
			{"child:2", "1", map[string]string{"a": "1"}, nil},
		},
		want: map[string]map[string]string{"/1": {"a": "root"}, "child:1/1": {"a": "child"}, "child:2/1": {}},
	}, {
		name: "ForkReusesVersions",
		puts: []put{
			{"", "1", map[string]string{"a": "1", "b": "1"}, []saver.Blob{blob("a", "1", "a"), blob("b", "1", "b")}},
			{"", "2", map[string]string{"a": "2", "b": "1"}, []saver.Blob{blob("a", "2", "a2")}},
			// update_state(as_node="__copy__"): a new checkpoint, same versions, no blobs.
			{"", "3", map[string]string{"a": "1", "b": "1"}, nil},
		},
		want: map[string]map[string]string{"/1": {"a": "a", "b": "b"}, "/2": {"a": "a2", "b": "b"}, "/3": {"a": "a", "b": "b"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := NewRef()
			for _, p := range tt.puts {
				in := NewCheckpoint(InNS(ref, p.ns), p.id)
				if p.versions != nil {
					in.ChannelVersions = p.versions
				}
				in.Blobs = p.blobs
				MustPutCheckpoint(t, s, in)
			}
			for key, want := range tt.want {
				ns, id := splitKey(key)
				tup := MustGetTuple(t, s, At(InNS(ref, ns), id))
				if diff := cmp.Diff(want, Values(tup)); diff != "" {
					t.Errorf("values of %s mismatch (-want +got):\n%s", key, diff)
				}
				for _, b := range tup.Values {
					if got, want := b.Version, tup.ChannelVersions[b.Channel]; got != want {
						t.Errorf("%s: value of %s has version %q, want %q", key, b.Channel, got, want)
					}
				}
			}
		})
	}
}

func splitKey(key string) (ns, id string) {
	i := len(key) - 1
	for key[i] != '/' {
		i--
	}
	return key[:i], key[i+1:]
}
