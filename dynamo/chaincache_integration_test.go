//go:build integration

package dynamo_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/dynamo"
	"github.com/saver-dev/saver/localstack"
	"github.com/saver-dev/saver/storetest"
)

// itemsRead counts the items Query answers: what a read takes from the
// table.
type itemsRead struct {
	dynamo.DynamoAPI
	n atomic.Int64
}

func (c *itemsRead) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := c.DynamoAPI.Query(ctx, in, optFns...)
	if err == nil {
		c.n.Add(int64(len(out.Items)))
	}
	return out, err
}

// replicas returns two stores on the stack's table, as two services: a,
// whose Query items are counted, and b; and a third, cold, that never
// remembers a chain.
func replicas(st *localstack.Stack) (a *dynamo.Store, reads *itemsRead, b, cold *dynamo.Store) {
	reads = &itemsRead{DynamoAPI: st.DB}
	a = dynamo.NewStore(reads, st.Store.Table())
	b = dynamo.NewStore(st.DB, st.Store.Table())
	cold = dynamo.NewStore(st.DB, st.Store.Table())
	cold.RememberChains(0)
	return a, reads, b, cold
}

// mustAgree checks the history of messages at ref on each store.
func mustAgree(t *testing.T, ref saver.CheckpointRef, want storetest.History, stores ...saver.Store) {
	t.Helper()
	for _, s := range stores {
		storetest.MustEqualHistory(t, s, ref, map[string]storetest.History{"messages": want})
	}
}

// TestDeltaHistoryReadsWhatIsNew: a replica that read a chain's history
// reads, for the next turn's, only the checkpoints written since, however
// long the chain, and the seed not at all; the turns were written by another
// replica. Before, every turn read the chain back to its seed again.
func TestDeltaHistoryReadsWhatIsNew(t *testing.T) {
	st := localstack.MustStore(t)
	a, reads, b, cold := replicas(st)
	ref := storetest.NewRef()
	storetest.PutChat(t, b, ref, 200, 1)
	mustAgree(t, storetest.At(ref, "0200"), storetest.History{Seed: "S1", HasSeed: true, Writes: storetest.ChatWrites(1, 199)}, a)
	if n := reads.n.Load(); n < 200 {
		t.Fatalf("the first history read %d items; want the chain's, 200 and more", n)
	}
	storetest.PutChatTurns(t, b, ref, 201, 203)
	reads.n.Store(0)
	want := storetest.History{Seed: "S1", HasSeed: true, Writes: storetest.ChatWrites(1, 202)}
	mustCount(t, st, requests{"Query": 1}, func() { mustAgree(t, storetest.At(ref, "0203"), want, a) })
	// 0200 (the last target, not cached) to 0203 and their writes.
	if n := reads.n.Load(); n > 8 {
		t.Fatalf("the next turn's history read %d items; want at most the 8 of the last target and the three new checkpoints", n)
	}
	mustAgree(t, storetest.At(ref, "0203"), want, b, cold)
	// Latest too.
	mustAgree(t, ref, want, a)
}

// TestDeltaHistoryCacheAndForks: a fork off a cached chain (time travel,
// or update_state on a checkpoint that has children, which LangGraph saves
// as a new checkpoint holding the channel's value) answers from its own
// branch, on a replica that cached the other one as on one that did not.
func TestDeltaHistoryCacheAndForks(t *testing.T) {
	st := localstack.MustStore(t)
	a, _, b, cold := replicas(st)
	ref := storetest.NewRef()
	storetest.PutChat(t, b, ref, 50, 1)
	mustAgree(t, storetest.At(ref, "0050"), storetest.History{Seed: "S1", HasSeed: true, Writes: storetest.ChatWrites(1, 49)}, a)

	// Time travel from 0030: the fork's writes, after the shared part.
	storetest.PutDelta(t, b, ref, "0060", "0030", []string{"messages=60:"}, "messages")
	storetest.MustPutWrites(t, b, storetest.At(ref, "0060"), storetest.DeltaWrite("task", "messages", "fork"))
	storetest.PutDelta(t, b, ref, "0061", "0060", []string{"messages=61:"}, "messages")
	want := storetest.History{Seed: "S1", HasSeed: true, Writes: append(storetest.ChatWrites(1, 30), "task/0/messages=fork")}
	mustAgree(t, storetest.At(ref, "0061"), want, a, b, cold)

	// update_state on 0040, which has a child: a new checkpoint that holds
	// the value, and the update's writes on it.
	storetest.PutDelta(t, b, ref, "0070", "0040", []string{"messages=70:F"})
	storetest.MustPutWrites(t, b, storetest.At(ref, "0070"), storetest.DeltaWrite("task", "messages", "update"))
	storetest.PutDelta(t, b, ref, "0071", "0070", []string{"messages=71:"}, "messages")
	want = storetest.History{Seed: "F", HasSeed: true, Writes: []string{"task/0/messages=update"}}
	mustAgree(t, storetest.At(ref, "0071"), want, a, b, cold)

	// The first branch still reads as it did.
	mustAgree(t, storetest.At(ref, "0050"), storetest.History{Seed: "S1", HasSeed: true, Writes: storetest.ChatWrites(1, 49)}, a, cold)
}

// TestDeltaHistoryLateWrites: writes that come for a checkpoint after a
// history read it are in the next history. The target of a history is never
// cached, so writes put on the latest checkpoint (update_state on it, or a
// task's pending writes) are seen once it has a child, through any replica;
// a write this replica takes for a checkpoint it cached drops it.
func TestDeltaHistoryLateWrites(t *testing.T) {
	st := localstack.MustStore(t)
	a, _, b, cold := replicas(st)
	ref := storetest.NewRef()
	storetest.PutChat(t, b, ref, 20, 1)
	mustAgree(t, storetest.At(ref, "0020"), storetest.History{Seed: "S1", HasSeed: true, Writes: storetest.ChatWrites(1, 19)}, a)

	// Through the other replica, on the latest checkpoint, then its child.
	storetest.MustPutWrites(t, b, storetest.At(ref, "0020"), storetest.DeltaWrite("update", "messages", "late"))
	storetest.PutChatTurns(t, b, ref, 21, 21)
	want := storetest.History{Seed: "S1", HasSeed: true, Writes: append(storetest.ChatWrites(1, 20), "update/0/messages=late")}
	mustAgree(t, storetest.At(ref, "0021"), want, a, cold)

	// Through this replica, on a checkpoint it cached (0019, 0020): the
	// store allows writes on any checkpoint at any time.
	storetest.MustPutWrites(t, a, storetest.At(ref, "0019"), storetest.DeltaWrite("zlate", "messages", "later"))
	want = storetest.History{Seed: "S1", HasSeed: true, Writes: storetest.ChatWrites(1, 19)}
	want.Writes = append(want.Writes, "zlate/0/messages=later")
	want.Writes = append(want.Writes, storetest.ChatWrites(20, 20)...)
	want.Writes = append(want.Writes, "update/0/messages=late")
	mustAgree(t, storetest.At(ref, "0021"), want, a, cold)
}

// TestDeltaHistoryAfterDelete: a thread this replica deletes and that is
// put again under the same ids (once the deletion's tombstones have
// expired, as before that they refuse such puts) reads as put again, not
// as cached.
func TestDeltaHistoryAfterDelete(t *testing.T) {
	st := localstack.MustStore(t)
	a, _, _, cold := replicas(st)
	clock := storetest.NewClock()
	a.Now, cold.Now = clock.Now, clock.Now
	ref := storetest.NewRef()
	storetest.PutChat(t, a, ref, 10, 1)
	mustAgree(t, storetest.At(ref, "0010"), storetest.History{Seed: "S1", HasSeed: true, Writes: storetest.ChatWrites(1, 9)}, a)
	if err := a.DeleteThread(t.Context(), ref.Tenant, ref.ThreadID); err != nil {
		t.Fatal(err)
	}
	clock.Advance(a.TombstoneLifetime + time.Second)
	storetest.PutDelta(t, cold, ref, "0001", "", []string{"messages=1:T1"})
	for i := 2; i <= 10; i++ {
		id := fmt.Sprintf("%04d", i)
		storetest.PutDelta(t, cold, ref, id, fmt.Sprintf("%04d", i-1), []string{fmt.Sprintf("messages=%d:", i)}, "messages")
	}
	storetest.MustPutWrites(t, cold, storetest.At(ref, "0005"), storetest.DeltaWrite("task", "messages", "again"))
	mustAgree(t, storetest.At(ref, "0010"), storetest.History{Seed: "T1", HasSeed: true, Writes: []string{"task/0/messages=again"}}, a, cold)
}
