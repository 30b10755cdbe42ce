// Package storetest is the behavioural contract every saver.Store must pass,
// and the helpers its tests use to build checkpoints and read them back.
//
// A backend's test calls Run with a function that opens (or returns) a store:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) saver.Store { return MustOpen(t) })
//	}
//
// Every subtest works in its own random tenant and thread ids and never
// assumes the store is empty, so open may hand every subtest the same shared
// store (a DynamoDB table, say).
//
// The optional interfaces have contracts of their own, which a store that
// implements them runs too. RunTree checks saver.TreeStore and RunHeadGuard
// conditional puts (PutCheckpoint.ExpectHead). RunLedger checks saver.Ledger, and
// RunExpiry checks expiries and saver.Expirer, with a Clock per subtest,
// which open hands to the store:
//
//	func TestLedger(t *testing.T) {
//		storetest.RunLedger(t, func(t *testing.T, now func() time.Time) storetest.LedgerStore {
//			s := MustOpen(t)
//			s.Now = now
//			return s
//		})
//	}
package storetest

import (
	"bytes"
	"crypto/rand"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/saver-dev/saver"
)

// test is one subtest of the store contract.
type test = storeTest[saver.Store]

// Run runs the contract against the store that open returns. open is called
// once per subtest, possibly from parallel subtests; it may return the same
// store every time. Closing the store is open's business (t.Cleanup).
func Run(t *testing.T, open func(t *testing.T) saver.Store) {
	runStoreGroups(t, []group[test]{
		{"PutGet", putGetTests},
		{"Blobs", blobTests},
		{"Growing", growingTests},
		{"Writes", writeTests},
		{"Delta", deltaTests},
		{"List", listTests},
		{"DeleteThread", deleteThreadTests},
		{"DeleteForRuns", deleteForRunsTests},
		{"CopyThread", copyThreadTests},
		{"Prune", pruneTests},
		{"Tombstones", tombstoneTests},
		{"DeltaThreads", deltaThreadTests},
		{"Tenants", tenantTests},
		{"Keys", keyTests},
		{"Concurrency", concurrencyTests},
		{"Errors", errorTests},
	}, open)
}

// NewTenant returns a tenant name no other test uses.
func NewTenant() string { return "tenant-" + rand.Text() }

// NewRef returns the root namespace of a new thread in a new tenant, so that
// a test sees only its own data even in a store shared with other tests.
func NewRef() saver.CheckpointRef {
	return saver.CheckpointRef{Tenant: NewTenant(), ThreadID: "thread-" + rand.Text()}
}

// Typed returns a payload holding s, tagged as LangGraph's serializer tags
// msgpack values.
func Typed(s string) saver.Typed { return saver.Typed{Type: "msgpack", Data: []byte(s)} }

// NewCheckpoint returns a put of checkpoint id in ref's thread and namespace,
// with a body naming the id, metadata {"source": "loop", "step": 0} and no
// channels. Tests change its fields before putting it.
func NewCheckpoint(ref saver.CheckpointRef, id string) saver.PutCheckpoint {
	ref.ID = id
	return saver.PutCheckpoint{Checkpoint: saver.Checkpoint{
		CheckpointRef:   ref,
		Body:            Typed("checkpoint " + id),
		Metadata:        saver.Metadata{"source": "loop", "step": int64(0)},
		ChannelVersions: map[string]string{},
	}}
}

// SetChannel sets channel to version in the checkpoint and adds the blob
// holding value, as a put with channel in new_versions does.
func SetChannel(in *saver.PutCheckpoint, channel, version, value string) {
	in.ChannelVersions[channel] = version
	in.Blobs = append(in.Blobs, saver.Blob{Channel: channel, Version: version, Value: Typed(value)})
}

// NewWrite returns a write of value to channel by task taskID at idx, with an
// empty task path.
func NewWrite(taskID string, idx int64, channel, value string) saver.Write {
	return saver.Write{TaskID: taskID, Idx: idx, Channel: channel, Value: Typed(value)}
}

// At returns ref naming checkpoint id.
func At(ref saver.CheckpointRef, id string) saver.CheckpointRef {
	ref.ID = id
	return ref
}

// InNS returns ref in namespace ns.
func InNS(ref saver.CheckpointRef, ns string) saver.CheckpointRef {
	ref.NS = ns
	return ref
}

// MustPutCheckpoint validates in, as the API does, and puts it.
func MustPutCheckpoint(tb testing.TB, s saver.Store, in saver.PutCheckpoint) {
	tb.Helper()
	if err := in.Validate(); err != nil {
		tb.Fatalf("Validate(%s): %v", in.ID, err)
	}
	if err := s.PutCheckpoint(tb.Context(), in); err != nil {
		tb.Fatalf("PutCheckpoint(%s): %v", in.ID, err)
	}
}

// MustPutWrites validates the writes against ref, as the API does, and puts them.
func MustPutWrites(tb testing.TB, s saver.Store, ref saver.CheckpointRef, writes ...saver.Write) {
	tb.Helper()
	in := saver.PutWrites{CheckpointRef: ref, Writes: writes}
	if err := in.Validate(); err != nil {
		tb.Fatalf("Validate(writes on %s): %v", ref.ID, err)
	}
	if err := s.PutWrites(tb.Context(), in); err != nil {
		tb.Fatalf("PutWrites(%s): %v", ref.ID, err)
	}
}

// MustGetTuple returns the checkpoint named by ref, failing if there is none.
func MustGetTuple(tb testing.TB, s saver.Store, ref saver.CheckpointRef) *saver.Tuple {
	tb.Helper()
	tup, err := s.GetTuple(tb.Context(), ref)
	if err != nil {
		tb.Fatalf("GetTuple(%+v): %v", ref, err)
	}
	if tup == nil {
		tb.Fatalf("GetTuple(%+v) = nil, nil", ref)
	}
	return tup
}

// MustNotFind fails unless GetTuple(ref) returns ENOTFOUND.
func MustNotFind(tb testing.TB, s saver.Store, ref saver.CheckpointRef) {
	tb.Helper()
	tup, err := s.GetTuple(tb.Context(), ref)
	if got, want := saver.ErrorCode(err), saver.ENOTFOUND; got != want {
		tb.Fatalf("GetTuple(%+v) error code = %q (tuple %v, err %v), want %q", ref, got, tup, err, want)
	}
}

// MustList validates f, as the API does, and returns the listing.
func MustList(tb testing.TB, s saver.Store, f saver.ListFilter) []*saver.Tuple {
	tb.Helper()
	if err := f.Validate(); err != nil {
		tb.Fatalf("Validate(filter): %v", err)
	}
	tuples, err := s.ListCheckpoints(tb.Context(), f)
	if err != nil {
		tb.Fatalf("ListCheckpoints(%+v): %v", f, err)
	}
	return tuples
}

// MustListThread returns every checkpoint of a thread, in all namespaces.
func MustListThread(tb testing.TB, s saver.Store, tenant, threadID string) []*saver.Tuple {
	tb.Helper()
	return MustList(tb, s, saver.ListFilter{Tenant: tenant, ThreadID: threadID})
}

// IDs returns the checkpoint ids of tuples, in order.
func IDs(tuples []*saver.Tuple) []string {
	ids := make([]string, len(tuples))
	for i, tup := range tuples {
		ids[i] = tup.ID
	}
	return ids
}

// Positions returns the listing positions of tuples, in order.
func Positions(tuples []*saver.Tuple) []saver.ListPosition {
	ps := make([]saver.ListPosition, len(tuples))
	for i, tup := range tuples {
		ps[i] = tup.Position()
	}
	return ps
}

// Values returns a tuple's resolved channel values as channel -> payload text.
func Values(tup *saver.Tuple) map[string]string {
	m := make(map[string]string, len(tup.Values))
	for _, b := range tup.Values {
		m[b.Channel] = string(b.Value.Data)
	}
	return m
}

// WriteValues returns a tuple's writes as "task_id/idx/channel=value", in
// the order the store returned them.
func WriteValues(tup *saver.Tuple) []string {
	out := make([]string, len(tup.Writes))
	for i, w := range tup.Writes {
		out[i] = w.TaskID + "/" + strconv.FormatInt(w.Idx, 10) + "/" + w.Channel + "=" + string(w.Value.Data)
	}
	return out
}

// WantTuple returns the tuple a store must return for in once the given
// writes are stored against it: the blobs of in that are not empty as values.
func WantTuple(in saver.PutCheckpoint, writes ...saver.Write) *saver.Tuple {
	tup := &saver.Tuple{Checkpoint: in.Checkpoint, Writes: slices.Clone(writes)}
	for _, b := range in.Blobs {
		if b.Value.Type != saver.EmptyType {
			tup.Values = append(tup.Values, b)
		}
	}
	SortWrites(tup.Writes)
	return tup
}

// SortWrites sorts writes into the order stores return them: by task path,
// task id and idx.
func SortWrites(ws []saver.Write) {
	slices.SortFunc(ws, func(a, b saver.Write) int {
		if c := strings.Compare(a.TaskPath, b.TaskPath); c != 0 {
			return c
		}
		if c := strings.Compare(a.TaskID, b.TaskID); c != 0 {
			return c
		}
		switch {
		case a.Idx < b.Idx:
			return -1
		case a.Idx > b.Idx:
			return 1
		}
		return 0
	})
}

// TupleOptions compare tuples as the contract defines them: nil and empty
// slices and maps are the same, and values are a set keyed by channel.
// Payloads are compared with bytes.Equal: cmp would walk a byte slice
// element by element, which takes seconds at a few hundred KB.
var TupleOptions = cmp.Options{
	cmpopts.EquateEmpty(),
	cmpopts.SortSlices(func(a, b saver.Blob) bool { return a.Channel < b.Channel }),
	// Empty payloads are EquateEmpty's: two options on one value would
	// be ambiguous.
	cmp.FilterValues(func(a, b []byte) bool { return len(a) > 0 || len(b) > 0 }, cmp.Comparer(bytes.Equal)),
}

// MustEqualTuple fails if got differs from want.
func MustEqualTuple(tb testing.TB, got, want *saver.Tuple) {
	tb.Helper()
	if diff := cmp.Diff(want, got, TupleOptions); diff != "" {
		tb.Fatalf("tuple %s mismatch (-want +got):\n%s", want.ID, diff)
	}
}

// MustEqualTuples fails if got differs from want, element by element.
func MustEqualTuples(tb testing.TB, got, want []*saver.Tuple) {
	tb.Helper()
	if diff := cmp.Diff(want, got, TupleOptions); diff != "" {
		tb.Fatalf("tuples mismatch (-want +got):\n%s", diff)
	}
}
