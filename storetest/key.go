package storetest

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver"
)

var keyTests = []test{
	{"NoCollisions", testKeysNoCollisions},
	{"ChannelVersionCollision", testKeysChannelVersionCollision},
}

// Identifiers that a store joining key parts naively would confuse: shared
// prefixes, separators, escape bytes, path and percent characters.
var (
	trickyThreads = []string{"a", "a\x00", "a\x00b", "a\x00\x00", "a\x01", "a\x01\x01", "ab", "a/b", "a%2Fb", "ü", " "}
	trickyNS      = []string{"", "\x00", "a", "a\x00", "a|b"}
	trickyIDs     = []string{"1", "1\x00", "1\x01", "10"}
)

// testKeysNoCollisions fills one tenant with every combination of tricky
// thread, namespace and checkpoint ids, and checks that each reads back as
// its own: body, latest, values, writes and listings.
func testKeysNoCollisions(t *testing.T, s saver.Store) {
	tenant := NewTenant()
	label := func(thread, ns, id string) string { return fmt.Sprintf("%q|%q|%q", thread, ns, id) }
	type key struct{ thread, ns string }
	latest := map[key]string{}
	perThread := map[string]int{}
	k := 0
	for _, thread := range trickyThreads {
		for _, ns := range trickyNS {
			// Each (thread, ns) gets a different number of ids, so that a
			// collision shows as a wrong latest or a wrong count.
			ids := trickyIDs[:1+k%len(trickyIDs)]
			k++
			for _, id := range ids {
				ref := saver.CheckpointRef{Tenant: tenant, ThreadID: thread, NS: ns, ID: id}
				in := NewCheckpoint(ref, id)
				in.Body = Typed(label(thread, ns, id))
				SetChannel(&in, "c"+id, id, label(thread, ns, id))
				MustPutCheckpoint(t, s, in)
				MustPutWrites(t, s, ref, NewWrite("t"+id, 0, "ch", label(thread, ns, id)))
				latest[key{thread, ns}] = max(latest[key{thread, ns}], id)
				perThread[thread]++
			}
		}
	}
	for _, thread := range trickyThreads {
		for _, ns := range trickyNS {
			for _, id := range trickyIDs {
				ref := saver.CheckpointRef{Tenant: tenant, ThreadID: thread, NS: ns, ID: id}
				if id > latest[key{thread, ns}] {
					MustNotFind(t, s, ref)
					continue
				}
				tup := MustGetTuple(t, s, ref)
				want := label(thread, ns, id)
				if got := string(tup.Body.Data); got != want {
					t.Fatalf("body of %s = %s", want, got)
				}
				if got := Values(tup); !cmp.Equal(got, map[string]string{"c" + id: want}) {
					t.Fatalf("values of %s = %v", want, got)
				}
				if got := WriteValues(tup); !cmp.Equal(got, []string{"t" + id + "/0/ch=" + want}) {
					t.Fatalf("writes of %s = %v", want, got)
				}
			}
			tup := MustGetTuple(t, s, saver.CheckpointRef{Tenant: tenant, ThreadID: thread, NS: ns})
			if got, want := string(tup.Body.Data), label(thread, ns, latest[key{thread, ns}]); got != want {
				t.Fatalf("latest = %s, want %s", got, want)
			}
			listed := MustList(t, s, saver.ListFilter{Tenant: tenant, ThreadID: thread, NS: &ns})
			for _, l := range listed {
				if l.ThreadID != thread || l.NS != ns {
					t.Fatalf("listing %q in %q returned %+v", thread, ns, l.Position())
				}
			}
		}
		if got, want := len(MustListThread(t, s, tenant, thread)), perThread[thread]; got != want {
			t.Fatalf("thread %q lists %d checkpoints, want %d", thread, got, want)
		}
	}
}

// testKeysChannelVersionCollision gives one checkpoint two (channel, version)
// pairs that join to the same string.
func testKeysChannelVersionCollision(t *testing.T, s saver.Store) {
	ref := NewRef()
	in := NewCheckpoint(ref, "0001")
	SetChannel(&in, "x", "y\x00z", "first")
	SetChannel(&in, "x\x00y", "z", "second")
	SetChannel(&in, "x\x01", "y", "third")
	SetChannel(&in, "x", "\x01y", "never read")
	in.ChannelVersions["x"] = "y\x00z"
	MustPutCheckpoint(t, s, in)
	got := Values(MustGetTuple(t, s, ref))
	want := map[string]string{"x": "first", "x\x00y": "second", "x\x01": "third"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("values mismatch (-want +got):\n%s", diff)
	}
}
