//go:build integration

package dynamo_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/dynamo"
	"github.com/saver-dev/saver/localstack"
	"github.com/saver-dev/saver/storetest"
)

// mustIndexAgree fails unless the thread's tree index holds exactly the
// entries, with the expiries, that its checkpoints and writes make, has its
// marker (once a tree query ran), and ListNodes answers what a read of
// the checkpoints and writes does.
func mustIndexAgree(t *testing.T, s *dynamo.Store, ref saver.CheckpointRef) {
	t.Helper()
	nodes := storetest.MustListNodes(t, s, ref.Tenant, ref.ThreadID)
	scanned, err := s.ScanNodes(t.Context(), ref.Tenant, ref.ThreadID)
	if err != nil {
		t.Fatal(err)
	}
	storetest.SortNodes(scanned)
	if diff := cmp.Diff(scanned, nodes, storetest.NodeOptions); diff != "" {
		t.Fatalf("ListNodes differs from the items (-items +index):\n%s", diff)
	}
	got, want, marked, err := s.TreeIndex(t.Context(), ref.Tenant, ref.ThreadID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("tree index differs from the items (-items +index):\n%s", diff)
	}
	if !marked && len(nodes) > 0 {
		t.Fatal("no marker after a tree query")
	}
}

// putNode puts checkpoint id of ref with parent, a value, metadata of
// run, expiring at exp (0: never).
func putNode(t *testing.T, s saver.Store, ref saver.CheckpointRef, id, parent, run string, exp int64) {
	t.Helper()
	in := storetest.NewCheckpoint(ref, id)
	in.ParentID = parent
	in.Metadata = saver.Metadata{"source": "loop", "step": int64(len(id)), "run_id": run}
	if ref.NS != "" {
		in.Metadata["parents"] = map[string]any{"": "0001"}
	}
	storetest.SetChannel(&in, "messages", id, "m"+id)
	storetest.MustPutCheckpoint(t, s, storetest.Expiring(in, exp))
}

// TestTreeIndexFollowsChanges changes a thread every way the store can
// (puts in two namespaces with forks, errors, interrupts and ordinary
// writes, writes ahead of their checkpoint, set_expiry, delete_for_runs,
// copy_thread, prune, expiry) and checks after each that the tree index
// agrees with the items; once as puts leave the index, once with every
// tree query packing it into pages (treepage.go).
func TestTreeIndexFollowsChanges(t *testing.T) {
	for _, packAt := range []int{0, 1} {
		t.Run(fmt.Sprintf("PackAt%d", packAt), func(t *testing.T) { treeIndexFollowsChanges(t, packAt) })
	}
}

func treeIndexFollowsChanges(t *testing.T, packAt int) {
	st := localstack.MustStore(t)
	clock := storetest.NewClock()
	s := withClock(st.Store, clock.Now)
	s.TreePackAt = packAt
	ref := storetest.NewRef()
	sub := ref
	sub.NS = "child:1"
	hour := clock.Now().Add(time.Hour).Unix()

	putNode(t, s, ref, "0001", "", "r1", 0)
	putNode(t, s, ref, "0002", "0001", "r1", hour)
	putNode(t, s, ref, "0003", "0002", "r2", hour)
	putNode(t, s, ref, "0004", "0002", "r2", 0) // a fork
	putNode(t, s, ref, "0005", "0004", "r3", hour)
	putNode(t, s, sub, "0001", "", "r1", 0)
	putNode(t, s, sub, "0002", "0001", "r2", 0)
	storetest.MustPutExpiringWrites(t, s, storetest.At(ref, "0003"), hour,
		storetest.NewWrite("a", 0, "ch", "w"), storetest.NewWrite("a", -1, saver.ChannelError, "boom"))
	storetest.MustPutWrites(t, s, storetest.At(ref, "0005"), storetest.NewWrite("b", -3, saver.ChannelInterrupt, "stop"))
	storetest.MustPutWrites(t, s, storetest.At(sub, "0002"), storetest.NewWrite("c", -1, saver.ChannelError, "boom"),
		storetest.NewWrite("d", -1, saver.ChannelError, "boom"), storetest.NewWrite("d", -2, saver.ChannelScheduled, "s"))
	// Ahead of its checkpoint: indexed, no node shows it.
	storetest.MustPutWrites(t, s, storetest.At(ref, "0006"), storetest.NewWrite("e", -1, saver.ChannelError, "boom"))
	mustIndexAgree(t, s, ref)
	if nodes := storetest.MustListNodes(t, s, ref.Tenant, ref.ThreadID); len(nodes) != 7 || !nodes[2].HasError || !nodes[4].HasInterrupt || !nodes[6].HasError {
		t.Fatalf("nodes %+v", nodes)
	}

	// From here on the thread has its marker: what follows must keep the
	// index whole without a rebuild.
	t.Run("PutsAndWrites", func(t *testing.T) {
		putNode(t, s, ref, "0007", "0005", "r3", hour)
		storetest.MustPutWrites(t, s, storetest.At(ref, "0004"), storetest.NewWrite("f", -3, saver.ChannelInterrupt, "stop"))
		storetest.MustPutExpiringWrites(t, s, storetest.At(sub, "0001"), hour, storetest.NewWrite("g", -1, saver.ChannelError, "boom"))
		mustMarked(t, s, ref)
		mustIndexAgree(t, s, ref)
	})
	t.Run("SetExpiry", func(t *testing.T) {
		// Extends 0003 and its error write; then pins 0005 forever.
		storetest.MustSetExpiry(t, s, storetest.At(ref, "0003"), clock.Now().Add(3*time.Hour).Unix())
		mustIndexAgree(t, s, ref)
		storetest.MustSetExpiry(t, s, storetest.At(ref, "0005"), 0)
		mustIndexAgree(t, s, ref)
	})
	t.Run("PutAgain", func(t *testing.T) {
		putNode(t, s, ref, "0002", "0001", "r1", clock.Now().Add(2*time.Hour).Unix())
		mustIndexAgree(t, s, ref)
	})
	t.Run("CopyThread", func(t *testing.T) {
		dst := storetest.NewRef()
		dst.Tenant = ref.Tenant
		if err := s.CopyThread(t.Context(), ref.Tenant, ref.ThreadID, dst.ThreadID); err != nil {
			t.Fatal(err)
		}
		mustMarked(t, s, dst)
		mustIndexAgree(t, s, dst)
	})
	t.Run("DeleteForRuns", func(t *testing.T) {
		if err := s.DeleteForRuns(t.Context(), ref.Tenant, []string{"r3"}); err != nil {
			t.Fatal(err)
		}
		mustMarked(t, s, ref)
		mustIndexAgree(t, s, ref)
		if nodes := storetest.MustListNodes(t, s, ref.Tenant, ref.ThreadID); len(nodes) != 6 {
			t.Fatalf("%d nodes after deleting run r3, want 6", len(nodes))
		}
	})
	t.Run("Expiry", func(t *testing.T) {
		clock.Advance(2*time.Hour + time.Minute) // past 0002's, not 0003's
		mustIndexAgree(t, s, ref)
		if nodes := storetest.MustListNodes(t, s, ref.Tenant, ref.ThreadID); len(nodes) != 5 {
			t.Fatalf("%d nodes once 0002 expired, want 5", len(nodes))
		}
	})
	t.Run("Prune", func(t *testing.T) {
		if err := s.Prune(t.Context(), ref.Tenant, []string{ref.ThreadID}, saver.PruneKeepLatest); err != nil {
			t.Fatal(err)
		}
		mustMarked(t, s, ref)
		mustIndexAgree(t, s, ref)
		if nodes := storetest.MustListNodes(t, s, ref.Tenant, ref.ThreadID); len(nodes) != 2 {
			t.Fatalf("%d nodes after prune, want the latest of each namespace", len(nodes))
		}
	})
	t.Run("DeleteThread", func(t *testing.T) {
		if err := s.DeleteThread(t.Context(), ref.Tenant, ref.ThreadID); err != nil {
			t.Fatal(err)
		}
		if items := threadItemCount(t, st, ref); items != 0 {
			t.Fatalf("%d items left", items)
		}
	})
}

// mustMarked fails unless the thread has its marker, before any tree
// query of it.
func mustMarked(t *testing.T, s *dynamo.Store, ref saver.CheckpointRef) {
	t.Helper()
	_, _, marked, err := s.TreeIndex(t.Context(), ref.Tenant, ref.ThreadID)
	if err != nil {
		t.Fatal(err)
	}
	if !marked {
		t.Fatal("no marker")
	}
}

// threadItemCount returns the number of items of the thread's partition.
func threadItemCount(t *testing.T, st *localstack.Stack, ref saver.CheckpointRef) int {
	t.Helper()
	out, err := st.DB.Query(t.Context(), &dynamodb.QueryInput{
		TableName:                 ptr(st.Store.Table()),
		KeyConditionExpression:    ptr("PK = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": dynamo.CheckpointItemKey(ref.Tenant, ref.ThreadID, "", "x")["PK"]},
		ConsistentRead:            ptr(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Items)
}

// dropIndex deletes the thread's tree index items, as a thread written
// before the index has none, and returns how many there were.
func dropIndex(t *testing.T, st *localstack.Stack, ref saver.CheckpointRef) int {
	t.Helper()
	pk := dynamo.CheckpointItemKey(ref.Tenant, ref.ThreadID, "", "x")["PK"]
	out, err := st.DB.Query(t.Context(), &dynamodb.QueryInput{
		TableName:                 ptr(st.Store.Table()),
		KeyConditionExpression:    ptr("PK = :pk AND begins_with(SK, :n)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": pk, ":n": &types.AttributeValueMemberS{Value: dynamo.IndexKeyPrefix + "!"}},
		ProjectionExpression:      ptr("PK, SK"),
		ConsistentRead:            ptr(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range out.Items {
		if _, err := st.DB.DeleteItem(t.Context(), &dynamodb.DeleteItemInput{TableName: ptr(st.Store.Table()), Key: it}); err != nil {
			t.Fatal(err)
		}
	}
	return len(out.Items)
}

// TestTreeIndexOldLayout reads the tree of threads written before the
// index (their index items deleted): the first query answers from the
// items, makes the index whole (deleting an index item whose checkpoint
// is gone, as a copy cut off part-way leaves) and puts the marker; the
// next reads the index alone, in one Query.
func TestTreeIndexOldLayout(t *testing.T) {
	st := localstack.MustStore(t)
	s := st.Store
	ref := storetest.NewRef()
	sub := ref
	sub.NS = "child:1"
	var want []saver.Node
	for i := range 30 {
		id, parent := fmt.Sprintf("%04d", i), ""
		if i > 0 {
			parent = fmt.Sprintf("%04d", i-1)
		}
		r := ref
		if i%10 == 9 {
			r = sub
		}
		putNode(t, s, r, id, parent, "r", 0)
		n := saver.Node{ThreadID: ref.ThreadID, NS: r.NS, ID: id, ParentID: parent, Source: "loop", Step: 4}
		if r.NS != "" {
			n.Parents = map[string]string{"": "0001"}
		}
		if i%7 == 0 {
			storetest.MustPutWrites(t, s, storetest.At(r, id), storetest.NewWrite("t", -1, saver.ChannelError, "boom"))
			n.HasError = true
		}
		if i%11 == 0 {
			storetest.MustPutWrites(t, s, storetest.At(r, id), storetest.NewWrite("t", -3, saver.ChannelInterrupt, "stop"))
			n.HasInterrupt = true
		}
		want = append(want, n)
	}
	// 30 nodes, 5 errors, 3 interrupts; no marker yet.
	if n := dropIndex(t, st, ref); n != 38 {
		t.Fatalf("%d index items, want 38", n)
	}
	// An index item whose checkpoint is gone.
	putNode(t, s, ref, "0100", "0029", "r", 0)
	if _, err := st.DB.DeleteItem(t.Context(), &dynamodb.DeleteItemInput{TableName: ptr(s.Table()), Key: dynamo.CheckpointItemKey(ref.Tenant, ref.ThreadID, "", "0100")}); err != nil {
		t.Fatal(err)
	}

	cold := dynamo.NewStore(st.DB, s.Table())
	mustCount(t, st, requests{"Query": 2, "TransactWriteItems": 1, "UpdateItem": 1}, func() {
		storetest.MustEqualNodes(t, cold, ref.Tenant, ref.ThreadID, want)
	})
	mustIndexAgree(t, cold, ref)
	mustCount(t, st, requests{"Query": 1}, func() {
		storetest.MustEqualNodes(t, cold, ref.Tenant, ref.ThreadID, want)
	})
	// An unknown thread: no marker is put.
	other := storetest.NewRef()
	mustCount(t, st, requests{"Query": 2}, func() {
		storetest.MustEqualNodes(t, cold, other.Tenant, other.ThreadID, nil)
	})
}

// TestTreeIndexReplicas has two replicas write one thread at once, in a
// namespace each and in a shared one, with errors and a delete_for_runs,
// while a third reads its tree, which builds the index of a thread whose
// first checkpoints were written before it: the index agrees with the
// items at the end; once more with every tree query packing the index
// into pages.
func TestTreeIndexReplicas(t *testing.T) {
	for _, packAt := range []int{0, 1} {
		t.Run(fmt.Sprintf("PackAt%d", packAt), func(t *testing.T) { treeIndexReplicas(t, packAt) })
	}
}

func treeIndexReplicas(t *testing.T, packAt int) {
	st := localstack.MustStore(t)
	a, b, reader := withClock(st.Store, st.Store.Now), dynamo.NewStore(st.DB, st.Store.Table()), dynamo.NewStore(st.DB, st.Store.Table())
	a.TreePackAt, b.TreePackAt, reader.TreePackAt = packAt, packAt, packAt
	ref := storetest.NewRef()
	for i := range 20 {
		putNode(t, a, ref, fmt.Sprintf("0000-%02d", i), "", "old", 0)
	}
	dropIndex(t, st, ref)
	var wg sync.WaitGroup
	for w, s := range []*dynamo.Store{a, b} {
		own := ref
		own.NS = fmt.Sprintf("replica:%d", w)
		wg.Go(func() {
			for i := range 40 {
				r := own
				if i%2 == 0 {
					r = ref // shared
				}
				id := fmt.Sprintf("%d-%04d", w+1, i)
				putNode(t, s, r, id, "", fmt.Sprintf("run-%d", i%4), 0)
				if i%5 == 0 {
					storetest.MustPutWrites(t, s, storetest.At(r, id), storetest.NewWrite("t", -1, saver.ChannelError, "boom"))
				}
			}
		})
	}
	wg.Go(func() {
		for range 10 {
			if _, err := reader.ListNodes(t.Context(), ref.Tenant, ref.ThreadID); err != nil {
				t.Error(err)
				return
			}
		}
		if err := reader.DeleteForRuns(t.Context(), ref.Tenant, []string{"run-1", "old"}); err != nil {
			t.Error(err)
		}
	})
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	mustIndexAgree(t, reader, ref)
	mustIndexAgree(t, a, ref)
}

// beforeTombstones passes calls through, and runs hook once, just before
// the first BatchWriteItem that writes tombstones: after the deletion read
// what it deletes, before a put can meet a tombstone.
type beforeTombstones struct {
	dynamo.DynamoAPI
	hook func()
}

func (b *beforeTombstones) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	for _, reqs := range in.RequestItems {
		for _, r := range reqs {
			if r.PutRequest == nil || b.hook == nil {
				continue
			}
			if pk, _ := r.PutRequest.Item["PK"].(*types.AttributeValueMemberS); pk != nil && strings.Contains(pk.Value, "~gone") {
				hook := b.hook
				b.hook = nil
				hook()
			}
		}
	}
	return b.DynamoAPI.BatchWriteItem(ctx, in, opts...)
}

// TestTreeIndexStragglers: a put and an error write that race a deletion
// (stored after the deletion read the thread, before its tombstones) are
// deleted by its straggler pass with their tree index items, so that the
// index still agrees with the items (delete_for_runs, whose thread keeps
// its marker) and the thread has no index left (delete_thread); once more
// with every tree query packing the index into pages.
func TestTreeIndexStragglers(t *testing.T) {
	for _, packAt := range []int{0, 1} {
		t.Run(fmt.Sprintf("PackAt%d", packAt), func(t *testing.T) { treeIndexStragglers(t, packAt) })
	}
}

func treeIndexStragglers(t *testing.T, packAt int) {
	st := localstack.MustStore(t)
	late := withClock(st.Store, st.Store.Now) // another replica, unaware of the deletion
	late.TreePackAt = packAt
	straggle := func(ref saver.CheckpointRef, parent, run string) func() {
		return func() {
			putNode(t, late, ref, "0009", parent, run, 0)
			storetest.MustPutWrites(t, late, storetest.At(ref, "0009"), storetest.NewWrite("t", -1, saver.ChannelError, "boom"))
		}
	}
	t.Run("DeleteForRuns", func(t *testing.T) {
		ref := storetest.NewRef()
		putNode(t, late, ref, "0001", "", "r1", 0)
		putNode(t, late, ref, "0002", "0001", "r2", 0)
		mustIndexAgree(t, late, ref) // and the marker
		s := dynamo.NewStore(&beforeTombstones{DynamoAPI: st.DB, hook: straggle(ref, "0002", "r2")}, st.Store.Table())
		s.TreePackAt = packAt
		if err := s.DeleteForRuns(t.Context(), ref.Tenant, []string{"r2"}); err != nil {
			t.Fatal(err)
		}
		mustMarked(t, late, ref)
		mustIndexAgree(t, late, ref)
		if nodes := storetest.MustListNodes(t, late, ref.Tenant, ref.ThreadID); len(nodes) != 1 || nodes[0].ID != "0001" {
			t.Fatalf("nodes %+v, want 0001 alone", nodes)
		}
	})
	t.Run("DeleteThread", func(t *testing.T) {
		ref := storetest.NewRef()
		putNode(t, late, ref, "0001", "", "r1", 0)
		mustIndexAgree(t, late, ref)
		s := dynamo.NewStore(&beforeTombstones{DynamoAPI: st.DB, hook: straggle(ref, "0001", "r1")}, st.Store.Table())
		s.TreePackAt = packAt
		if err := s.DeleteThread(t.Context(), ref.Tenant, ref.ThreadID); err != nil {
			t.Fatal(err)
		}
		got, want, marked, err := late.TreeIndex(t.Context(), ref.Tenant, ref.ThreadID)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 0 || len(want) != 0 || marked {
			t.Fatalf("after the deletion: index %v, items making %v, marker %v; want none", got, want, marked)
		}
	})
}
