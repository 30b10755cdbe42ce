//go:build integration

package dynamo_test

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
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

// TestStore runs the store contract on one shared table and bucket, with
// offloading on.
func TestStore(t *testing.T) {
	st := localstack.MustStore(t)
	storetest.Run(t, func(t *testing.T) saver.Store { return st.Store })
}

// TestStoreOffloadEverything runs the contract with a threshold of zero, so
// that every payload goes through S3.
func TestStoreOffloadEverything(t *testing.T) {
	st := localstack.MustStore(t)
	st.Store.OffloadThreshold = 0
	storetest.Run(t, func(t *testing.T) saver.Store { return st.Store })
}

// TestTree runs the tree contract on the shared table, once more with
// every tree query packing the index into pages (treepage.go).
func TestTree(t *testing.T) {
	st := localstack.MustStore(t)
	storetest.RunTree(t, func(t *testing.T) storetest.TreeStore { return st.Store })
	t.Run("PackAt1", func(t *testing.T) {
		s := withClock(st.Store, st.Store.Now)
		s.TreePackAt = 1
		storetest.RunTree(t, func(t *testing.T) storetest.TreeStore { return s })
	})
}

// TestLedger runs the ledger contract on the shared table, each subtest on
// a store value of its own driven by the subtest's clock.
func TestLedger(t *testing.T) {
	st := localstack.MustStore(t)
	storetest.RunLedger(t, func(t *testing.T, now func() time.Time) storetest.LedgerStore {
		return withClock(st.Store, now)
	})
}

// withClock returns a store over s's table and offloader that reads the
// time from now.
func withClock(s *dynamo.Store, now func() time.Time) *dynamo.Store {
	c := *s
	c.Now = now
	return &c
}

// TestExpiryContract runs the expiry contract on the shared table and
// bucket, each subtest on a store value of its own driven by its clock.
func TestExpiryContract(t *testing.T) {
	st := localstack.MustStore(t)
	storetest.RunExpiry(t, func(t *testing.T, now func() time.Time) storetest.ExpiryStore {
		return withClock(st.Store, now)
	})
	t.Run("PackAt1", func(t *testing.T) { // every tree query packs the index (treepage.go)
		storetest.RunExpiry(t, func(t *testing.T, now func() time.Time) storetest.ExpiryStore {
			s := withClock(st.Store, now)
			s.TreePackAt = 1
			return s
		})
	})
}

// requests is a request count by operation, "" entries omitted.
type requests map[string]int64

// mustCount runs fn and checks the DynamoDB requests it sent.
func mustCount(t *testing.T, st *localstack.Stack, want requests, fn func()) {
	t.Helper()
	st.DBRequests.Reset()
	fn()
	got := requests(st.DBRequests.Snapshot())
	maps.DeleteFunc(got, func(_ string, n int64) bool { return n == 0 })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("DynamoDB requests mismatch (-want +got):\n%s\nattempts that failed (retried ones count twice above): %v", diff, st.DBRequests.Failed())
	}
}

// TestRequestCounts pins the number of DynamoDB requests of each operation:
// they are the store's cost and latency, and regressions are silent otherwise.
func TestRequestCounts(t *testing.T) {
	st := localstack.MustStore(t)
	s := st.Store
	// cold is another replica: it remembers none of s's values, so its
	// reads take them from the table.
	cold := dynamo.NewStore(st.DB, s.Table())
	ref, other := storetest.NewRef(), storetest.NewRef()

	// A thread with history: the latest checkpoint must not cost more than
	// the first.
	for i := range 5 {
		in := storetest.NewCheckpoint(ref, fmt.Sprintf("%04d", i))
		storetest.SetChannel(&in, "messages", fmt.Sprint(i), "m")
		storetest.MustPutCheckpoint(t, s, in)
		storetest.MustPutWrites(t, s, in.CheckpointRef, storetest.NewWrite("t", 0, "ch", "w"))
	}

	tests := []struct {
		name string
		want requests
		fn   func(t *testing.T)
	}{
		// The checkpoint, its tree index item and the check that its id
		// has no tombstone (tombstone.go): one TransactWriteItems.
		{"PutCheckpointNoBlobs", requests{"TransactWriteItems": 1}, func(t *testing.T) {
			storetest.MustPutCheckpoint(t, s, storetest.NewCheckpoint(ref, "0005"))
		}},
		// A parent adds its check to the same request. (In another thread,
		// as the 97 blobs below, so that ref's stays as the pins below
		// count it.)
		{"PutCheckpointNoBlobsWithParent", requests{"TransactWriteItems": 1}, func(t *testing.T) {
			in := storetest.NewCheckpoint(other, "0002")
			in.ParentID = "0001"
			storetest.MustPutCheckpoint(t, s, in)
		}},
		{"PutCheckpoint5Blobs", requests{"TransactWriteItems": 1}, func(t *testing.T) {
			in := storetest.NewCheckpoint(ref, "0006")
			for i := range 5 {
				storetest.SetChannel(&in, fmt.Sprint("ch", i), "6", "v")
			}
			storetest.MustPutCheckpoint(t, s, in)
		}},
		// 97 new blobs, the check, the checkpoint and its tree index item
		// fill one transaction, the namespace item left out (98 before
		// the check; 96 for a put with a parent).
		{"PutCheckpoint97Blobs", requests{"TransactWriteItems": 1}, func(t *testing.T) {
			in := storetest.NewCheckpoint(other, "0003")
			for i := range 97 {
				storetest.SetChannel(&in, fmt.Sprint("ch", i), "3", "v")
			}
			storetest.MustPutCheckpoint(t, s, in)
		}},
		// 99 blobs, the check, the checkpoint, its index item and the
		// namespace item are 103 items: a transaction of the check, the
		// namespace item and 98 blobs, then the last blob, the check, the
		// checkpoint and its index item.
		{"PutCheckpoint99Blobs", requests{"TransactWriteItems": 2}, func(t *testing.T) {
			in := storetest.NewCheckpoint(ref, "0007")
			for i := range 99 {
				storetest.SetChannel(&in, fmt.Sprint("ch", i), "7", "v")
			}
			storetest.MustPutCheckpoint(t, s, in)
		}},
		{"PutCheckpoint150Blobs", requests{"TransactWriteItems": 2}, func(t *testing.T) {
			in := storetest.NewCheckpoint(ref, "0008")
			for i := range 150 {
				storetest.SetChannel(&in, fmt.Sprint("ch", i), "8", "v")
			}
			storetest.MustPutCheckpoint(t, s, in)
		}},
		// An insert-if-absent-or-expired with the check that the
		// checkpoint has no tombstone: one TransactWriteItems (a PutItem
		// before the check).
		{"PutOneWrite", requests{"TransactWriteItems": 1}, func(t *testing.T) {
			storetest.MustPutWrites(t, s, storetest.At(ref, "0008"), storetest.NewWrite("t", 0, "ch", "w"))
		}},
		{"Put25Writes", requests{"TransactWriteItems": 1}, func(t *testing.T) {
			var ws []saver.Write
			for i := range 25 {
				ws = append(ws, storetest.NewWrite("t", int64(i), "ch", "w"))
			}
			ws = append(ws[:24], storetest.NewWrite("t", -1, "__error__", "boom"))
			storetest.MustPutWrites(t, s, storetest.At(ref, "0007"), ws...)
		}},
		// Ordinary writes go in one bundle item, whatever their number.
		{"Put100Writes", requests{"TransactWriteItems": 1}, func(t *testing.T) {
			var ws []saver.Write
			for i := range 100 {
				ws = append(ws, storetest.NewWrite("u", int64(i), "ch", "w"))
			}
			storetest.MustPutWrites(t, s, storetest.At(ref, "0007"), ws...)
		}},
		// Past one transaction too: one bundle item, alone or with the
		// special writes in one transaction.
		{"Put150Writes", requests{"TransactWriteItems": 1}, func(t *testing.T) {
			var ws []saver.Write
			for i := range 150 {
				ws = append(ws, storetest.NewWrite("v", int64(i), "ch", "w"))
			}
			storetest.MustPutWrites(t, s, storetest.At(ref, "0007"), ws...)
		}},
		{"Put150WritesAndAnError", requests{"TransactWriteItems": 1}, func(t *testing.T) {
			var ws []saver.Write
			for i := range 150 {
				ws = append(ws, storetest.NewWrite("x", int64(i), "ch", "w"))
			}
			ws = append(ws, storetest.NewWrite("x", -1, "__error__", "boom"))
			storetest.MustPutWrites(t, s, storetest.At(ref, "0007"), ws...)
		}},
		{"GetLatest150Values", requests{"Query": 1, "BatchGetItem": 2}, func(t *testing.T) {
			tup := storetest.MustGetTuple(t, cold, ref)
			if tup.ID != "0008" || len(tup.Values) != 150 || len(tup.Writes) != 1 {
				t.Fatalf("latest = %s with %d values, %d writes", tup.ID, len(tup.Values), len(tup.Writes))
			}
		}},
		// The replica that put them remembers the values: the Query alone,
		// and the same tuple.
		{"GetLatest150ValuesFromMemory", requests{"Query": 1}, func(t *testing.T) {
			storetest.MustEqualTuples(t, []*saver.Tuple{storetest.MustGetTuple(t, s, ref)}, []*saver.Tuple{storetest.MustGetTuple(t, cold, ref)})
			st.DBRequests.Reset()
			storetest.MustGetTuple(t, s, ref)
		}},
		{"GetByID", requests{"Query": 1, "BatchGetItem": 1}, func(t *testing.T) {
			tup := storetest.MustGetTuple(t, cold, storetest.At(ref, "0007"))
			if len(tup.Values) != 99 || len(tup.Writes) != 426 {
				t.Fatalf("0007 has %d values, %d writes", len(tup.Values), len(tup.Writes))
			}
		}},
		{"GetLatestNoChannels", requests{"Query": 1}, func(t *testing.T) {
			other := storetest.NewRef()
			storetest.MustPutCheckpoint(t, s, storetest.NewCheckpoint(other, "1"))
			st.DBRequests.Reset()
			storetest.MustGetTuple(t, s, other)
		}},
		{"ListNamespaceLimit2", requests{"Query": 1, "BatchGetItem": 1}, func(t *testing.T) {
			ns := ""
			got := storetest.MustList(t, cold, saver.ListFilter{Tenant: ref.Tenant, ThreadID: ref.ThreadID, NS: &ns, Before: "0005", Limit: 2})
			if diff := cmp.Diff([]string{"0004", "0003"}, storetest.IDs(got)); diff != "" {
				t.Fatal(diff)
			}
		}},
		{"ListThread", requests{"Query": 1, "BatchGetItem": 3}, func(t *testing.T) {
			if got := storetest.MustListThread(t, dynamo.NewStore(st.DB, s.Table()), ref.Tenant, ref.ThreadID); len(got) != 9 {
				t.Fatalf("listed %d checkpoints, want 9", len(got))
			}
		}},
		// The first tree query of a thread reads its checkpoints and writes
		// too, finds its index whole and puts the marker (an update, which
		// keeps the pages a marker lists: treepage.go).
		{"ListNodesFirst", requests{"Query": 2, "UpdateItem": 1}, func(t *testing.T) {
			nodes := storetest.MustListNodes(t, s, ref.Tenant, ref.ThreadID)
			if len(nodes) != 9 || !nodes[7].HasError || nodes[6].HasError {
				t.Fatalf("nodes %+v, want 9 with an error on 0007", nodes)
			}
		}},
		{"ListNodes", requests{"Query": 1}, func(t *testing.T) {
			nodes := storetest.MustListNodes(t, s, ref.Tenant, ref.ThreadID)
			if len(nodes) != 9 || !nodes[7].HasError || nodes[6].HasError {
				t.Fatalf("nodes %+v, want 9 with an error on 0007", nodes)
			}
		}},
		// One page of the thread, its 292 items 25 a request, as
		// DeleteThread, and before the marker goes a GetItem of it: no pack
		// or deletion changed the pages meanwhile (treepage.go).
		{"CopyThread", requests{"Query": 1, "BatchWriteItem": 12, "GetItem": 1}, func(t *testing.T) {
			if err := s.CopyThread(t.Context(), ref.Tenant, ref.ThreadID, ref.ThreadID+"-copy"); err != nil {
				t.Fatal(err)
			}
		}},
		// 9 checkpoints, 10 bundles and 2 error writes, 5+5+99+150
		// blobs: 280 items, and their tree index: 9 nodes, 2 flags and
		// the marker; 25 a request; first 1 request of the 9 checkpoints'
		// tombstones, then 1 Query of what raced the deletion
		// (tombstone.go), and last 1 Query of the tree index pages a pack
		// listed meanwhile (treepage.go).
		{"DeleteThread", requests{"Query": 3, "BatchWriteItem": 13}, func(t *testing.T) {
			if err := s.DeleteThread(t.Context(), ref.Tenant, ref.ThreadID); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustCount(t, st, tt.want, func() { tt.fn(t) })
		})
	}
	for _, tt := range slices.Concat(ledgerCounts(s), expiryCounts(s), deltaCounts(t, st), itemCounts(s)) {
		t.Run(tt.name, func(t *testing.T) {
			if tt.setup != nil {
				tt.setup(t)
			}
			mustCount(t, st, tt.want, func() { tt.fn(t) })
		})
	}
}

// deltaCounts pins the requests of a delta history read from the table (a
// replica whose chain cache is off): one Query (a page reaches back 100
// steps of a chat and more) and one BatchGetItem for the seed, whatever
// the depth; no BatchGetItem when no ancestor holds one. With the chain
// cache, the next turn's history is one Query of the checkpoints newer
// than what the cache holds, the seed included.
func deltaCounts(t *testing.T, st *localstack.Stack) []countTest {
	cached := st.Store
	s := dynamo.NewStore(st.DB, cached.Table())
	s.RememberChains(0)
	ref, fresh := storetest.NewRef(), storetest.NewRef()
	storetest.PutChat(t, s, ref, 300, 1, 101, 201)
	storetest.PutChat(t, s, fresh, 80)
	history := func(s saver.Store, ref saver.CheckpointRef, seed string, from, to int) func(t *testing.T) {
		return func(t *testing.T) {
			h := storetest.History{Seed: seed, HasSeed: seed != "", Writes: storetest.ChatWrites(from, to)}
			storetest.MustEqualHistory(t, s, ref, map[string]storetest.History{"messages": h})
		}
	}
	return []countTest{
		{name: "DeltaHistoryDepth99", want: requests{"Query": 1, "BatchGetItem": 1}, fn: history(s, storetest.At(ref, "0300"), "S201", 201, 299)},
		{name: "DeltaHistoryDepth49", want: requests{"Query": 1, "BatchGetItem": 1}, fn: history(s, storetest.At(ref, "0150"), "S101", 101, 149)},
		{name: "DeltaHistoryDepth1", want: requests{"Query": 1, "BatchGetItem": 1}, fn: history(s, storetest.At(ref, "0202"), "S201", 201, 201)},
		{name: "DeltaHistoryLatest", want: requests{"Query": 1, "BatchGetItem": 1}, fn: history(s, ref, "S201", 201, 299)},
		{name: "DeltaHistoryToTheRoot", want: requests{"Query": 1}, fn: history(s, storetest.At(fresh, "0080"), "", 1, 79)},
		{name: "DeltaHistoryCachedFirstRead", want: requests{"Query": 1, "BatchGetItem": 1}, fn: history(cached, storetest.At(ref, "0300"), "S201", 201, 299)},
		{name: "DeltaHistoryCachedNextTurn", want: requests{"Query": 1}, fn: history(cached, ref, "S201", 201, 302),
			setup: func(t *testing.T) { storetest.PutChatTurns(t, s, ref, 301, 303) }}, // by another replica
		{name: "DeltaHistoryCachedAgain", want: requests{"Query": 1}, fn: history(cached, storetest.At(ref, "0300"), "S201", 201, 299)},
	}
}

// countTest is a case of TestRequestCounts: after setup, fn sends exactly
// want.
type countTest struct {
	name  string
	want  requests
	fn    func(t *testing.T)
	setup func(t *testing.T)
}

// ledgerCounts pins the requests of the ledger: a claim is one conditional
// UpdateItem whether granted or not (a failed condition returns the record),
// and two only when the record expired before DynamoDB deleted it.
func ledgerCounts(s *dynamo.Store) []countTest {
	clock := storetest.NewClock()
	l := withClock(s, clock.Now)
	in := storetest.NewClaim()
	var holder *saver.Claim
	claim := func(t *testing.T, state saver.ClaimState, attempt int) *saver.Claim {
		t.Helper()
		c := storetest.MustClaim(t, l, in)
		if c.State != state || c.Attempt != attempt {
			t.Fatalf("claim = %s, attempt %d; want %s, attempt %d", c.State, c.Attempt, state, attempt)
		}
		return c
	}
	return []countTest{
		{name: "ClaimNew", want: requests{"UpdateItem": 1}, fn: func(t *testing.T) { holder = claim(t, saver.ClaimClaimed, 1) }},
		{name: "ClaimInProgress", want: requests{"UpdateItem": 1}, fn: func(t *testing.T) { claim(t, saver.ClaimInProgress, 1) }},
		{name: "ClaimTakeOver", want: requests{"UpdateItem": 1}, fn: func(t *testing.T) {
			clock.Advance(in.Lease)
			holder = claim(t, saver.ClaimClaimed, 2)
		}},
		{name: "Complete", want: requests{"UpdateItem": 1}, fn: func(t *testing.T) {
			storetest.MustComplete(t, l, in.Tenant, in.Key, holder.Token, storetest.Result("done"))
		}},
		{name: "CompleteAgain", want: requests{"UpdateItem": 1}, fn: func(t *testing.T) {
			storetest.MustComplete(t, l, in.Tenant, in.Key, holder.Token, storetest.Result("done"))
		}},
		{name: "ClaimCompleted", want: requests{"UpdateItem": 1}, fn: func(t *testing.T) { claim(t, saver.ClaimCompleted, 2) }},
		{name: "ClaimExpiredKey", want: requests{"UpdateItem": 1, "PutItem": 1}, fn: func(t *testing.T) {
			clock.Advance(in.TTL)
			claim(t, saver.ClaimClaimed, 1)
		}},
	}
}

// expiryCounts pins the requests of puts in a session thread (lifetime one
// hour) whose scope then turns to forever, of puts with the default policy
// (no expiry anywhere) that reference blobs, of replayed writes and of
// SetExpiry.
func expiryCounts(s *dynamo.Store) []countTest {
	clock := storetest.NewClock()
	e := withClock(s, clock.Now)
	t0 := clock.Now()
	ref := storetest.NewRef()
	// put puts checkpoint id of ref with parent, expiring at exp, that
	// references the channels of refs and brings new blobs of channels.
	put := func(t *testing.T, id, parent string, exp int64, refs map[string]string, channels ...string) saver.PutCheckpoint {
		t.Helper()
		in := storetest.Expiring(storetest.NewCheckpoint(ref, id), exp)
		in.ParentID = parent
		maps.Copy(in.ChannelVersions, refs)
		for _, ch := range channels {
			storetest.SetChannel(&in, ch, id, ch+"@"+id)
		}
		storetest.MustPutCheckpoint(t, e, in)
		return in
	}
	session := func(since time.Duration) int64 { return t0.Add(since + time.Hour).Unix() }
	a1 := map[string]string{"a": "0001"}
	a1b3 := map[string]string{"a": "0001", "b": "0003"}
	w := storetest.NewWrite("t", 0, "ch", "w")
	return []countTest{
		// New blobs live twice the checkpoint's remaining hour: until t0+2h.
		{name: "PutSessionNewBlobs", want: requests{"TransactWriteItems": 1}, fn: func(t *testing.T) {
			put(t, "0001", "", session(0), nil, "a", "b")
			mustBlobExpiry(t, s, ref, "a", "0001", session(time.Hour))
		}},
		{name: "PutSessionChecks", want: requests{"TransactWriteItems": 1}, fn: func(t *testing.T) {
			clock.Advance(30 * time.Minute)
			put(t, "0002", "0001", session(30*time.Minute), a1, "b")
		}},
		// a@0001 would expire before the new checkpoint: its lifetimes
		// entry fails the condition and the second request extends it by
		// twice the remaining hour.
		{name: "PutSessionExtends", want: requests{"TransactWriteItems": 2}, fn: func(t *testing.T) {
			clock.Advance(40 * time.Minute)
			put(t, "0003", "0002", session(70*time.Minute), a1, "b")
			mustBlobExpiry(t, s, ref, "a", "0001", session(130*time.Minute))
		}},
		{name: "PutSessionNoNewBlob", want: requests{"TransactWriteItems": 1}, fn: func(t *testing.T) {
			clock.Advance(10 * time.Minute)
			put(t, "0004", "0003", session(80*time.Minute), a1b3)
		}},
		// The scope turns to forever: the lifetimes entries say the blobs
		// expire, and the second request makes them never expire.
		{name: "PutForeverAfterSession", want: requests{"TransactWriteItems": 2}, fn: func(t *testing.T) {
			put(t, "0005", "0004", 0, a1b3, "c")
			mustBlobExpiry(t, s, ref, "a", "0001", 0)
			mustBlobExpiry(t, s, ref, "b", "0003", 0)
		}},
		{name: "PutDefaultOldChannels", want: requests{"TransactWriteItems": 1}, fn: func(t *testing.T) {
			put(t, "0006", "0005", 0, map[string]string{"a": "0001", "b": "0003", "c": "0005"}, "d")
		}},
		{name: "PutDefaultOldChannelsNoNewBlob", want: requests{"TransactWriteItems": 1}, fn: func(t *testing.T) {
			put(t, "0007", "0006", 0, map[string]string{"a": "0001", "b": "0003", "c": "0005", "d": "0006"})
		}},
		// A fork from 0002 references b@0002, whose entry the lifetimes item
		// no longer has (b@0003 replaced it): the put reads it, makes it
		// never expire and records it.
		{name: "PutForkReadsBlob", want: requests{"TransactWriteItems": 2, "BatchGetItem": 1}, fn: func(t *testing.T) {
			put(t, "0002.1", "0002", 0, map[string]string{"a": "0001", "b": "0002"}, "e")
			mustBlobExpiry(t, s, ref, "b", "0002", 0)
		}},
		{name: "PutWriteReplayed", want: requests{"TransactWriteItems": 1}, fn: func(t *testing.T) {
			storetest.MustPutWrites(t, e, storetest.At(ref, "0007"), w)
		}, setup: func(t *testing.T) {
			storetest.MustPutWrites(t, e, storetest.At(ref, "0007"), w)
		}},
		// The first bundle's key is taken, by the replayed write's: the
		// write it lacks goes in the next bundle.
		{name: "PutWritesOneReplayed", want: requests{"TransactWriteItems": 2}, fn: func(t *testing.T) {
			storetest.MustPutWrites(t, e, storetest.At(ref, "0007"), w, storetest.NewWrite("t", 1, "ch", "w1"))
		}},
		// 0004's blobs never expire by now; its write is extended with it.
		{name: "SetExpiryPin", want: requests{"Query": 1, "BatchGetItem": 1, "TransactWriteItems": 1}, fn: func(t *testing.T) {
			storetest.MustSetExpiry(t, e, storetest.At(ref, "0004"), 0)
		}, setup: func(t *testing.T) {
			storetest.MustPutExpiringWrites(t, e, storetest.At(ref, "0004"), session(80*time.Minute), w)
		}},
		{name: "SetExpiryCheckpointOnly", want: requests{"Query": 1, "BatchGetItem": 1, "TransactWriteItems": 1}, fn: func(t *testing.T) {
			storetest.MustSetExpiry(t, e, storetest.At(ref, "0006"), session(time.Hour))
		}},
	}
}

// mustBlobExpiry checks the expiry stored on a blob's item (0: none).
func mustBlobExpiry(t *testing.T, s *dynamo.Store, ref saver.CheckpointRef, channel, version string, want int64) {
	t.Helper()
	mustExpiry(t, s, dynamo.BlobItemKey(ref.Tenant, ref.ThreadID, ref.NS, channel, version), want)
}

// mustExpiry checks the expiry stored on an item (0: none), read with a
// client of its own so that request counts stay the store's.
func mustExpiry(t *testing.T, s *dynamo.Store, key map[string]types.AttributeValue, want int64) {
	t.Helper()
	out, err := dynamodb.NewFromConfig(localstack.MustConfig(t)).GetItem(t.Context(), &dynamodb.GetItemInput{
		TableName: ptr(s.Table()), Key: key, ConsistentRead: ptr(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Item == nil {
		t.Fatalf("no item %v", key)
	}
	got, ok := out.Item[dynamo.AttrExpiresAt].(*types.AttributeValueMemberN)
	if ok != (want != 0) || (ok && got.Value != fmt.Sprint(want)) {
		t.Fatalf("item %v expires at %v, want %d", key["SK"], out.Item[dynamo.AttrExpiresAt], want)
	}
}

// TestOffloadedRoundTrip puts payloads on both sides of the threshold and
// reads them back: large ones through S3, small ones inline.
func TestOffloadedRoundTrip(t *testing.T) {
	st := localstack.MustStore(t)
	s := st.Store
	ref := storetest.NewRef()
	big := bytes.Repeat([]byte{0xAB}, 400<<10)
	in := storetest.NewCheckpoint(ref, "1")
	in.Body = saver.Typed{Type: "msgpack", Data: big}
	in.Blobs = []saver.Blob{
		{Channel: "big", Version: "1", Value: saver.Typed{Type: "bytes", Data: big}},
		{Channel: "small", Version: "1", Value: storetest.Typed("s")},
	}
	in.ChannelVersions = map[string]string{"big": "1", "small": "1"}
	storetest.MustPutCheckpoint(t, s, in)
	w := saver.Write{TaskID: "t", Channel: "ch", Value: saver.Typed{Type: "bytes", Data: big}}
	storetest.MustPutWrites(t, s, in.CheckpointRef, w)

	if got, want := st.S3Requests.Snapshot()["PutObject"], int64(3); got != want {
		t.Fatalf("PutObject requests = %d, want %d (body, blob, write)", got, want)
	}
	storetest.MustEqualTuple(t, storetest.MustGetTuple(t, s, ref), storetest.WantTuple(in, w))
}

// TestMeasureWritePaths measures the two ways to write a checkpoint and its
// blobs, for the choice recorded in the package doc: one TransactWriteItems
// against a BatchWriteItem of the blobs followed by a PutItem of the
// checkpoint (the order that keeps a crash from exposing a checkpoint
// without blobs). It logs requests, write units and median latency.
func TestMeasureWritePaths(t *testing.T) {
	st := localstack.MustStore(t)
	table := st.Store.Table()
	const blobs, runs = 10, 40
	ctx := t.Context()
	items := func(run int) (cp map[string]types.AttributeValue, bs []map[string]types.AttributeValue) {
		pk := &types.AttributeValueMemberS{Value: fmt.Sprint("measure!", run)}
		for i := range blobs {
			bs = append(bs, map[string]types.AttributeValue{
				"PK": pk, "SK": &types.AttributeValueMemberS{Value: fmt.Sprint("b!", i)},
				"value": &types.AttributeValueMemberB{Value: bytes.Repeat([]byte{'v'}, 1000)},
			})
		}
		cp = map[string]types.AttributeValue{"PK": pk, "SK": &types.AttributeValueMemberS{Value: "c!1"},
			"checkpoint": &types.AttributeValueMemberB{Value: bytes.Repeat([]byte{'c'}, 2000)}}
		return cp, bs
	}
	measure := func(name string, put func(run int) float64) {
		var times []time.Duration
		var units float64
		st.DBRequests.Reset()
		for run := range runs {
			start := time.Now()
			units += put(run)
			times = append(times, time.Since(start))
		}
		slices.Sort(times)
		t.Logf("%-28s requests/put %v  write units/put %.1f  median %v",
			name, float64(st.DBRequests.Total())/runs, units/runs, times[runs/2])
	}
	total := types.ReturnConsumedCapacityTotal
	measure("TransactWriteItems", func(run int) float64 {
		cp, bs := items(run)
		var tx []types.TransactWriteItem
		for _, b := range bs {
			tx = append(tx, types.TransactWriteItem{Put: &types.Put{TableName: &table, Item: b}})
		}
		tx = append(tx, types.TransactWriteItem{Put: &types.Put{TableName: &table, Item: cp}})
		out, err := st.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: tx, ReturnConsumedCapacity: total})
		if err != nil {
			t.Fatal(err)
		}
		return capacity(out.ConsumedCapacity)
	})
	measure("BatchWriteItem then PutItem", func(run int) float64 {
		cp, bs := items(run + runs)
		var reqs []types.WriteRequest
		for _, b := range bs {
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: b}})
		}
		out, err := st.DB.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: reqs}, ReturnConsumedCapacity: total})
		if err != nil {
			t.Fatal(err)
		}
		put, err := st.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: cp, ReturnConsumedCapacity: total})
		if err != nil {
			t.Fatal(err)
		}
		return capacity(out.ConsumedCapacity) + capacity([]types.ConsumedCapacity{*put.ConsumedCapacity})
	})
}

func capacity(cs []types.ConsumedCapacity) float64 {
	var n float64
	for _, c := range cs {
		if c.CapacityUnits != nil {
			n += *c.CapacityUnits
		}
	}
	return n
}

// TestExpiry checks the TTL groundwork: CreateTable enables TTL on
// expires_at, items carry it when the store stamps one, and reads hide items
// whose expiry has passed before DynamoDB reaps them.
func TestExpiry(t *testing.T) {
	st := localstack.MustStore(t)
	s := st.Store
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	ttl, err := st.DB.DescribeTimeToLive(t.Context(), &dynamodb.DescribeTimeToLiveInput{TableName: ptr(s.Table())})
	if err != nil {
		t.Fatal(err)
	}
	if d := ttl.TimeToLiveDescription; d == nil || *d.AttributeName != dynamo.AttrExpiresAt || d.TimeToLiveStatus != types.TimeToLiveStatusEnabled {
		t.Fatalf("TTL = %+v, want enabled on %s", d, dynamo.AttrExpiresAt)
	}

	now := time.Now().Truncate(time.Second)
	s.Now = func() time.Time { return now }
	expiry := now.Add(time.Hour)
	ref := storetest.NewRef()
	in := storetest.NewCheckpoint(ref, "1")
	in.ExpiresAt, in.Scope = expiry.Unix(), saver.ScopeSession
	storetest.SetChannel(&in, "ch", "1", "v")
	storetest.MustPutCheckpoint(t, s, in)
	w := saver.PutWrites{CheckpointRef: in.CheckpointRef, Writes: []saver.Write{storetest.NewWrite("t", 0, "ch", "w")}, ExpiresAt: expiry.Unix()}
	if err := s.PutWrites(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	out, err := st.DB.Scan(t.Context(), &dynamodb.ScanInput{TableName: ptr(s.Table())})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range out.Items {
		want := expiry.Unix()
		if kind := it["kind"].(*types.AttributeValueMemberS).Value; kind == "blob" || kind == "lifetimes" {
			// A new blob lives twice its checkpoint's remaining lifetime,
			// and the namespace's lifetimes item as long as its blobs.
			want += 3600
		}
		if n, ok := it[dynamo.AttrExpiresAt].(*types.AttributeValueMemberN); !ok || n.Value != fmt.Sprint(want) {
			t.Fatalf("item %v has expires_at %v, want %d", it["SK"], it[dynamo.AttrExpiresAt], want)
		}
	}
	storetest.MustEqualTuple(t, storetest.MustGetTuple(t, s, ref), storetest.WantTuple(in, w.Writes...))

	s.Now = func() time.Time { return expiry.Add(time.Second) }
	storetest.MustNotFind(t, s, ref)
	if got := storetest.MustListThread(t, s, ref.Tenant, ref.ThreadID); len(got) != 0 {
		t.Fatalf("expired thread lists %d checkpoints", len(got))
	}
}

func ptr[T any](v T) *T { return &v }
