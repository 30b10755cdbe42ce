package storetest

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver"
)

var listTests = []test{
	{"Filters", testListFilters},
	{"Order", testListOrder},
	{"MetadataFilter", testListMetadataFilter},
	{"Paging", testListPaging},
	{"TenantScope", testListTenantScope},
	{"CarriesValuesAndWrites", testListCarriesValuesAndWrites},
}

// putChain puts, in ref's thread, four chained root checkpoints 0001..0004
// (sources input, loop, input, loop; steps 0..3), each with a channel value
// and a write, and checkpoint 0002 in namespace "child:1".
func putChain(t *testing.T, s saver.Store, ref saver.CheckpointRef) {
	t.Helper()
	sources := []string{"input", "loop", "input", "loop"}
	parent := ""
	for i, id := range []string{"0001", "0002", "0003", "0004"} {
		in := NewCheckpoint(ref, id)
		in.ParentID = parent
		in.Metadata = saver.Metadata{"source": sources[i], "step": int64(i), "parents": map[string]any{}}
		SetChannel(&in, "step", id, "value at "+id)
		MustPutCheckpoint(t, s, in)
		MustPutWrites(t, s, At(ref, id), NewWrite("task-"+id, 0, "ch", "write on "+id))
		parent = id
	}
	child := NewCheckpoint(InNS(ref, "child:1"), "0002")
	child.Metadata = saver.Metadata{"source": "loop", "step": int64(1), "parents": map[string]any{"": "0002"}}
	MustPutCheckpoint(t, s, child)
}

// pos is a listing position written compactly: thread, namespace, id.
func pos(thread, ns, id string) saver.ListPosition {
	return saver.ListPosition{ID: id, ThreadID: thread, NS: ns}
}

func ptr(s string) *string { return &s }

func testListFilters(t *testing.T, s saver.Store) {
	ref := NewRef()
	ref.ThreadID = "t"
	putChain(t, s, ref)
	root, child := pos("t", "", ""), pos("t", "child:1", "")
	at := func(p saver.ListPosition, id string) saver.ListPosition { p.ID = id; return p }

	tests := []struct {
		name string
		f    saver.ListFilter
		want []saver.ListPosition
	}{
		{"Thread", saver.ListFilter{},
			[]saver.ListPosition{at(root, "0004"), at(root, "0003"), at(root, "0002"), at(child, "0002"), at(root, "0001")}},
		{"RootOnly", saver.ListFilter{NS: ptr("")},
			[]saver.ListPosition{at(root, "0004"), at(root, "0003"), at(root, "0002"), at(root, "0001")}},
		{"ChildOnly", saver.ListFilter{NS: ptr("child:1")}, []saver.ListPosition{at(child, "0002")}},
		{"NamespacePrefixIsNotNamespace", saver.ListFilter{NS: ptr("child")}, nil},
		{"UnknownThread", saver.ListFilter{ThreadID: "no-such-thread"}, nil},
		{"CheckpointID", saver.ListFilter{CheckpointID: "0002"}, []saver.ListPosition{at(root, "0002"), at(child, "0002")}},
		{"CheckpointIDInNamespace", saver.ListFilter{NS: ptr(""), CheckpointID: "0002"}, []saver.ListPosition{at(root, "0002")}},
		{"UnknownCheckpointID", saver.ListFilter{CheckpointID: "0005"}, nil},
		{"Before", saver.ListFilter{Before: "0003"}, []saver.ListPosition{at(root, "0002"), at(child, "0002"), at(root, "0001")}},
		{"BeforeRoot", saver.ListFilter{NS: ptr(""), Before: "0003"}, []saver.ListPosition{at(root, "0002"), at(root, "0001")}},
		{"BeforeIsStringOrder", saver.ListFilter{Before: "00025"}, []saver.ListPosition{at(root, "0002"), at(child, "0002"), at(root, "0001")}},
		{"BeforeFirst", saver.ListFilter{Before: "0001"}, nil},
		{"BeforeAfterLast", saver.ListFilter{NS: ptr(""), Before: "1"},
			[]saver.ListPosition{at(root, "0004"), at(root, "0003"), at(root, "0002"), at(root, "0001")}},
		{"BeforeAndID", saver.ListFilter{CheckpointID: "0003", Before: "0003"}, nil},
		{"Limit1", saver.ListFilter{Limit: 1}, []saver.ListPosition{at(root, "0004")}},
		{"Limit2", saver.ListFilter{Limit: 2}, []saver.ListPosition{at(root, "0004"), at(root, "0003")}},
		{"Limit4AcrossNamespaces", saver.ListFilter{Limit: 4},
			[]saver.ListPosition{at(root, "0004"), at(root, "0003"), at(root, "0002"), at(child, "0002")}},
		{"LimitOverCount", saver.ListFilter{NS: ptr(""), Limit: 100},
			[]saver.ListPosition{at(root, "0004"), at(root, "0003"), at(root, "0002"), at(root, "0001")}},
		{"LimitAndBefore", saver.ListFilter{Before: "0004", Limit: 1}, []saver.ListPosition{at(root, "0003")}},
		{"LimitAndFilter", saver.ListFilter{Metadata: saver.Metadata{"source": "loop"}, Limit: 2},
			[]saver.ListPosition{at(root, "0004"), at(root, "0002")}},
		{"FilterAndNamespace", saver.ListFilter{NS: ptr("child:1"), Metadata: saver.Metadata{"source": "loop"}},
			[]saver.ListPosition{at(child, "0002")}},
		{"UnknownThreadAndFilter", saver.ListFilter{ThreadID: "no-such-thread", Metadata: saver.Metadata{"source": "loop"}}, nil},
		{"After", saver.ListFilter{After: &saver.ListPosition{ID: "0002", ThreadID: "t", NS: ""}},
			[]saver.ListPosition{at(child, "0002"), at(root, "0001")}},
		{"AfterLast", saver.ListFilter{After: &saver.ListPosition{ID: "0001", ThreadID: "t", NS: ""}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.f
			f.Tenant = ref.Tenant
			if f.ThreadID == "" {
				f.ThreadID = ref.ThreadID
			}
			got := Positions(MustList(t, s, f))
			if diff := cmp.Diff(tt.want, got, TupleOptions); diff != "" {
				t.Fatalf("listing mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// testListOrder checks the global order (id descending, then thread and
// namespace ascending) whatever the insertion order, ids compared as strings.
func testListOrder(t *testing.T, s saver.Store) {
	tenant := NewTenant()
	puts := []saver.ListPosition{
		pos("b", "", "2"), pos("a", "child", "2"), pos("a", "", "2"), pos("c", "", "1"),
		pos("a", "", "3"), pos("b", "child", "3"), pos("a", "", "1"), pos("b", "", "10"),
	}
	for _, p := range puts {
		ref := saver.CheckpointRef{Tenant: tenant, ThreadID: p.ThreadID, NS: p.NS}
		MustPutCheckpoint(t, s, NewCheckpoint(ref, p.ID))
	}
	tests := []struct {
		name   string
		thread string
		want   []saver.ListPosition
	}{
		{"Tenant", "", []saver.ListPosition{
			pos("a", "", "3"), pos("b", "child", "3"),
			pos("a", "", "2"), pos("a", "child", "2"), pos("b", "", "2"),
			pos("b", "", "10"),
			pos("a", "", "1"), pos("c", "", "1"),
		}},
		{"ThreadA", "a", []saver.ListPosition{pos("a", "", "3"), pos("a", "", "2"), pos("a", "child", "2"), pos("a", "", "1")}},
		{"ThreadB", "b", []saver.ListPosition{pos("b", "child", "3"), pos("b", "", "2"), pos("b", "", "10")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Positions(MustList(t, s, saver.ListFilter{Tenant: tenant, ThreadID: tt.thread}))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("order mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func testListMetadataFilter(t *testing.T, s saver.Store) {
	ref := NewRef()
	metadata := []saver.Metadata{
		{"source": "input", "step": int64(0), "run_id": "r1", "score": int64(42), "ratio": 0.5, "flag": true, "parents": map[string]any{"": "p"}},
		{"source": "loop", "step": int64(1), "run_id": "r1", "score": 42.0, "parents": map[string]any{}},
		{"source": "input", "step": int64(2), "run_id": "r2", "nested": map[string]any{"a": int64(1), "b": []any{int64(1), "x"}}},
		{"source": "loop", "step": int64(3), "run_id": "r2", "tags": []any{"a", "b"}, "none": nil},
	}
	ids := []string{"0001", "0002", "0003", "0004"}
	for i, md := range metadata {
		in := NewCheckpoint(ref, ids[i])
		in.Metadata = md
		MustPutCheckpoint(t, s, in)
	}
	tests := []struct {
		name   string
		filter saver.Metadata
		want   []string
	}{
		{"Empty", saver.Metadata{}, []string{"0004", "0003", "0002", "0001"}},
		{"SingleKey", saver.Metadata{"source": "input"}, []string{"0003", "0001"}},
		{"Int", saver.Metadata{"step": int64(1)}, []string{"0002"}},
		{"NegativeMiss", saver.Metadata{"step": int64(-1)}, nil},
		{"FloatMatchesInt", saver.Metadata{"step": 1.0}, []string{"0002"}},
		{"IntMatchesIntAndFloat", saver.Metadata{"score": int64(42)}, []string{"0002", "0001"}},
		{"FloatMatchesIntAndFloat", saver.Metadata{"score": 42.0}, []string{"0002", "0001"}},
		{"Fraction", saver.Metadata{"ratio": 0.5}, []string{"0001"}},
		{"Bool", saver.Metadata{"flag": true}, []string{"0001"}},
		{"StringIsNotInt", saver.Metadata{"step": "1"}, nil},
		{"MultipleKeysAnd", saver.Metadata{"source": "input", "step": int64(2)}, []string{"0003"}},
		{"MultipleKeysOneMisses", saver.Metadata{"source": "input", "step": int64(1)}, nil},
		{"CustomKeys", saver.Metadata{"run_id": "r2", "source": "loop"}, []string{"0004"}},
		{"NoMatch", saver.Metadata{"source": "update"}, nil},
		{"UnknownKey", saver.Metadata{"missing": "x"}, nil},
		// None matches a missing key too, as InMemorySaver's metadata.get(k) == v does.
		{"NullMatchesNullOrMissing", saver.Metadata{"none": nil}, []string{"0004", "0003", "0002", "0001"}},
		{"NullDoesNotMatchValue", saver.Metadata{"source": nil}, nil},
		{"NestedMap", saver.Metadata{"parents": map[string]any{"": "p"}}, []string{"0001"}},
		{"NestedEmptyMap", saver.Metadata{"parents": map[string]any{}}, []string{"0002"}},
		{"NestedDeep", saver.Metadata{"nested": map[string]any{"a": int64(1), "b": []any{int64(1), "x"}}}, []string{"0003"}},
		{"NestedNumbersByValue", saver.Metadata{"nested": map[string]any{"a": 1.0, "b": []any{1.0, "x"}}}, []string{"0003"}},
		{"NestedPartialMapIsNotEqual", saver.Metadata{"nested": map[string]any{"a": int64(1)}}, nil},
		{"List", saver.Metadata{"tags": []any{"a", "b"}}, []string{"0004"}},
		{"ListOrderMatters", saver.Metadata{"tags": []any{"b", "a"}}, nil},
		{"ListPrefixIsNotEqual", saver.Metadata{"tags": []any{"a"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, ns := range []*string{nil, ptr("")} {
				got := IDs(MustList(t, s, saver.ListFilter{Tenant: ref.Tenant, ThreadID: ref.ThreadID, NS: ns, Metadata: tt.filter}))
				if diff := cmp.Diff(tt.want, got, TupleOptions); diff != "" {
					t.Fatalf("ids mismatch (ns %v) (-want +got):\n%s", ns, diff)
				}
			}
		})
	}
}

// testListPaging pages through listings with the After cursor and expects
// the same sequence as one unpaged listing.
func testListPaging(t *testing.T, s saver.Store) {
	tenant := NewTenant()
	for i, thread := range []string{"a", "b", "c"} {
		for j, ns := range []string{"", "child:1", "child:2"} {
			for k := range 4 {
				// Ids overlap across threads and namespaces, so that ties are
				// broken by thread and namespace inside a page and across pages.
				id := string(rune('0'+k)) + string(rune('0'+(i+j)%2))
				in := NewCheckpoint(saver.CheckpointRef{Tenant: tenant, ThreadID: thread, NS: ns}, id)
				in.Metadata["even"] = (i+j+k)%2 == 0
				MustPutCheckpoint(t, s, in)
			}
		}
	}
	filters := []struct {
		name string
		f    saver.ListFilter
	}{
		{"Tenant", saver.ListFilter{}},
		{"Thread", saver.ListFilter{ThreadID: "b"}},
		{"ThreadRoot", saver.ListFilter{ThreadID: "b", NS: ptr("")}},
		{"Namespace", saver.ListFilter{NS: ptr("child:1")}},
		{"Before", saver.ListFilter{Before: "21"}},
		{"Metadata", saver.ListFilter{Metadata: saver.Metadata{"even": true}}},
		{"ThreadMetadataBefore", saver.ListFilter{ThreadID: "a", Before: "30", Metadata: saver.Metadata{"even": false}}},
	}
	for _, ff := range filters {
		for _, size := range []int{1, 2, 3, 7, 100} {
			t.Run(fmt.Sprintf("%s/size%d", ff.name, size), func(t *testing.T) {
				f := ff.f
				f.Tenant = tenant
				want := Positions(MustList(t, s, f))
				if len(want) == 0 {
					t.Fatal("unpaged listing is empty")
				}
				var got []saver.ListPosition
				for page := 0; ; page++ {
					if page > len(want) {
						t.Fatalf("paging does not end: got %v so far", got)
					}
					f.Limit = size
					tuples := MustList(t, s, f)
					got = append(got, Positions(tuples)...)
					if len(tuples) < size {
						break
					}
					last := tuples[len(tuples)-1].Position()
					f.After = &last
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("paged listing mismatch (-unpaged +paged):\n%s", diff)
				}
			})
		}
	}
}

// testListTenantScope checks that listing every thread covers the tenant's
// threads and no other tenant's, even when thread names coincide.
func testListTenantScope(t *testing.T, s saver.Store) {
	mine, theirs := NewTenant(), NewTenant()
	for _, tenant := range []string{mine, theirs} {
		for _, thread := range []string{"shared", "only-" + tenant} {
			MustPutCheckpoint(t, s, NewCheckpoint(saver.CheckpointRef{Tenant: tenant, ThreadID: thread}, "0001"))
		}
	}
	got := Positions(MustList(t, s, saver.ListFilter{Tenant: mine}))
	want := []saver.ListPosition{pos("only-"+mine, "", "0001"), pos("shared", "", "0001")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("tenant listing mismatch (-want +got):\n%s", diff)
	}
	for _, tup := range MustList(t, s, saver.ListFilter{Tenant: mine}) {
		if tup.Tenant != mine {
			t.Fatalf("listed tuple has tenant %q, want %q", tup.Tenant, mine)
		}
	}
}

// testListCarriesValuesAndWrites checks that every listed tuple is complete:
// the same as GetTuple returns for it.
func testListCarriesValuesAndWrites(t *testing.T, s saver.Store) {
	ref := NewRef()
	putChain(t, s, ref)
	MustPutWrites(t, s, At(InNS(ref, "child:1"), "0002"), NewWrite("task", -1, "__error__", "boom"))
	tuples := MustListThread(t, s, ref.Tenant, ref.ThreadID)
	if len(tuples) != 5 {
		t.Fatalf("listed %d tuples, want 5", len(tuples))
	}
	for _, tup := range tuples {
		ref := saver.CheckpointRef{Tenant: ref.Tenant, ThreadID: tup.ThreadID, NS: tup.NS, ID: tup.ID}
		MustEqualTuple(t, tup, MustGetTuple(t, s, ref))
		if tup.NS == "" && (len(tup.Values) != 1 || len(tup.Writes) != 1) {
			t.Fatalf("listed %s has values %v and writes %v, want one of each", tup.ID, Values(tup), WriteValues(tup))
		}
	}
}
