//go:build integration

package s3offload_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/dynamo"
	"github.com/saver-dev/saver/localstack"
	"github.com/saver-dev/saver/storetest"
)

// errCrash stands for the process dying after the object was written and
// before the item was.
var errCrash = errors.New("crash injected before the item write")

// crashingDB passes reads through to DynamoDB and fails every item write.
type crashingDB struct{ dynamo.DynamoAPI }

func (crashingDB) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return nil, errCrash
}

func (crashingDB) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return nil, errCrash
}

func (crashingDB) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return nil, errCrash
}

func ptr[T any](v T) *T { return &v }

func bigPut(ref saver.CheckpointRef, id string, fill byte) saver.PutCheckpoint {
	in := storetest.NewCheckpoint(ref, id)
	in.Body = saver.Typed{Type: "msgpack", Data: bytes.Repeat([]byte{fill}, 360<<10)}
	storetest.SetChannel(&in, "big", id, string(bytes.Repeat([]byte{fill + 1}, 360<<10)))
	return in
}

// later sets the offload store's clock hours ahead, as if the sweeper ran
// long after the writes, and returns a function that puts it back.
func later(st *localstack.Stack, d time.Duration) func() {
	st.Offload.Now = func() time.Time { return time.Now().Add(d) }
	return func() { st.Offload.Now = time.Now }
}

// TestCrashBetweenObjectAndItem injects a crash after the payload objects
// are written and before the items: the put fails, nothing points at the
// objects (no dangling pointer, the checkpoint is simply absent), the
// orphans are swept, and the retried put works.
func TestCrashBetweenObjectAndItem(t *testing.T) {
	st := localstack.MustStore(t)
	crashing := dynamo.NewStore(crashingDB{st.DB}, st.Store.Table())
	crashing.Offload = st.Offload
	ref := storetest.NewRef()
	in := bigPut(ref, "1", 'a')
	w := saver.Write{TaskID: "t", Channel: "ch", Value: saver.Typed{Type: "bytes", Data: bytes.Repeat([]byte{'w'}, 360<<10)}}

	if err := in.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := crashing.PutCheckpoint(t.Context(), in); !errors.Is(err, errCrash) {
		t.Fatalf("PutCheckpoint = %v, want the injected crash", err)
	}
	if err := crashing.PutWrites(t.Context(), saver.PutWrites{CheckpointRef: in.CheckpointRef, Writes: []saver.Write{w}}); !errors.Is(err, errCrash) {
		t.Fatalf("PutWrites = %v, want the injected crash", err)
	}
	orphans := st.Objects(t)
	if len(orphans) != 3 { // body, blob, write
		t.Fatalf("objects after the crash: %v, want 3 orphans", orphans)
	}
	storetest.MustNotFind(t, st.Store, ref)
	if refs, err := st.Store.OffloadRefs(t.Context(), ref.Tenant, ref.ThreadID); err != nil || len(refs) != 0 {
		t.Fatalf("OffloadRefs = %v, %v; want none", refs, err)
	}

	defer later(st, 3*time.Hour)()
	res, err := st.Sweeper.Sweep(t.Context(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Objects(t); len(got) != 0 || res.Deleted != 3 {
		t.Fatalf("after the sweep: %v left, result %+v; want the 3 orphans gone", got, res)
	}

	st.Offload.Now = time.Now
	storetest.MustPutCheckpoint(t, st.Store, in)
	storetest.MustPutWrites(t, st.Store, in.CheckpointRef, w)
	storetest.MustEqualTuple(t, storetest.MustGetTuple(t, st.Store, ref), storetest.WantTuple(in, w))
}

// TestSweeperKeepsLiveObjects sweeps a bucket holding live objects of
// several threads, objects replaced by a re-put, and orphans: only what no
// item points at goes, and every checkpoint still reads back whole.
func TestSweeperKeepsLiveObjects(t *testing.T) {
	st := localstack.MustStore(t)
	s := st.Store
	ref := storetest.NewRef()
	other := storetest.NewRef()

	live := bigPut(ref, "1", 'a')
	storetest.MustPutCheckpoint(t, s, live)
	otherLive := bigPut(other, "1", 'c')
	storetest.MustPutCheckpoint(t, s, otherLive)
	// Re-putting checkpoint 2 with a new body orphans its first body.
	replaced := bigPut(ref, "2", 'e')
	storetest.MustPutCheckpoint(t, s, replaced)
	replaced.Body.Data = bytes.Repeat([]byte{'g'}, 360<<10)
	replaced.Blobs = nil
	storetest.MustPutCheckpoint(t, s, replaced)
	// An orphan of a crashed put.
	if _, err := st.Offload.Offload(t.Context(), ref.Tenant, ref.ThreadID, []byte("orphan"), 0); err != nil {
		t.Fatal(err)
	}
	before := st.Objects(t)
	if len(before) != 8 {
		t.Fatalf("bucket holds %d objects, want 8", len(before))
	}

	// A sweep right away deletes nothing: the period is open.
	if res, err := st.Sweeper.Sweep(t.Context(), time.Minute); err != nil || res.Deleted != 0 {
		t.Fatalf("early sweep: %+v, %v; want nothing deleted", res, err)
	}
	restore := later(st, 3*time.Hour)
	res, err := st.Sweeper.Sweep(t.Context(), time.Minute)
	restore()
	if err != nil {
		t.Fatal(err)
	}
	if res.Deleted != 2 {
		t.Fatalf("sweep deleted %d objects, want 2 (the replaced body and the orphan)", res.Deleted)
	}
	if got := len(st.Objects(t)); got != 6 {
		t.Fatalf("%d objects left, want 6", got)
	}
	storetest.MustEqualTuple(t, storetest.MustGetTuple(t, s, storetest.At(ref, "1")), storetest.WantTuple(live))
	storetest.MustEqualTuple(t, storetest.MustGetTuple(t, s, storetest.At(other, "1")), storetest.WantTuple(otherLive))
	got := storetest.MustGetTuple(t, s, storetest.At(ref, "2"))
	if !bytes.Equal(got.Body.Data, replaced.Body.Data) || len(got.Values) != 1 {
		t.Fatalf("checkpoint 2 lost its body or value after the sweep")
	}

	// Deleting a thread removes its objects; the other thread's stay.
	if err := s.DeleteThread(t.Context(), ref.Tenant, ref.ThreadID); err != nil {
		t.Fatal(err)
	}
	if got := len(st.Objects(t)); got != 2 {
		t.Fatalf("%d objects left after delete_thread, want the other thread's 2", got)
	}
}

// bigItem is a put of an item whose value (over 350 KB) is offloaded.
func bigItem(ns saver.Namespace, key string, fill byte) saver.PutOp {
	return storetest.Put(ns, key, `{"text": "`+string(bytes.Repeat([]byte{fill}, 360<<10))+`"}`)
}

// TestSweeperKeepsLiveItemValues sweeps the offloaded values of the Store's
// items: a crashed put's orphan, a value replaced by a re-put, and one only
// an expired item points at go; live values stay and read back whole,
// whichever shard their item is in.
func TestSweeperKeepsLiveItemValues(t *testing.T) {
	st := localstack.MustStore(t)
	tenant := storetest.NewTenant()
	crashing := dynamo.NewStore(crashingDB{st.DB}, st.Store.Table())
	crashing.Offload = st.Offload
	if _, err := crashing.Batch(t.Context(), tenant, []saver.ItemOp{bigItem(saver.Namespace{"crashed"}, "k", 'a')}); !errors.Is(err, errCrash) {
		t.Fatalf("Batch = %v, want the injected crash", err)
	}
	if storetest.MustGet(t, st.Store, tenant, saver.Namespace{"crashed"}, "k") != nil {
		t.Fatal("the crashed put's item exists")
	}
	live := []saver.ItemOp{bigItem(saver.Namespace{"users", "u1"}, "k", 'b'), bigItem(saver.Namespace{"users", "u2", "memories"}, "k", 'c')}
	storetest.MustBatch(t, st.Store, tenant, live...)
	storetest.MustBatch(t, st.Store, tenant, bigItem(saver.Namespace{"replaced"}, "k", 'd'))
	storetest.MustBatch(t, st.Store, tenant, storetest.Put(saver.Namespace{"replaced"}, "k", `{"small": true}`))
	expiring := bigItem(saver.Namespace{"expiring"}, "k", 'e')
	expiring.TTL = time.Minute
	storetest.MustBatch(t, st.Store, tenant, expiring)
	if got := len(st.Objects(t)); got != 5 {
		t.Fatalf("bucket holds %d objects, want 5", got)
	}

	restore := later(st, 3*time.Hour)
	st.Store.Now = func() time.Time { return time.Now().Add(3 * time.Hour) }
	res, err := st.Sweeper.Sweep(t.Context(), time.Minute)
	st.Store.Now = time.Now
	restore()
	if err != nil {
		t.Fatal(err)
	}
	if res.Deleted != 3 {
		t.Fatalf("sweep deleted %d objects, want 3 (the orphan, the replaced value, the expired item's)", res.Deleted)
	}
	if got := len(st.Objects(t)); got != 2 {
		t.Fatalf("%d objects left, want the 2 live values", got)
	}
	for _, op := range live {
		p := op.(saver.PutOp)
		if it := storetest.MustGet(t, st.Store, tenant, p.Namespace, p.Key); it == nil || !bytes.Equal(it.Value, p.Value) {
			t.Fatalf("%v lost its value after the sweep", p.Namespace)
		}
	}
}
