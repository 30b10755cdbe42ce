//go:build integration

package dynamo_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/dynamo"
	"github.com/saver-dev/saver/localstack"
	"github.com/saver-dev/saver/storetest"
)

// chat is the value of a conversation after n turns: a msgpack-like header
// counting them, then n KB of text.
func chat(n int) saver.Typed {
	rng := rand.New(rand.NewPCG(1, 2))
	text := make([]byte, n<<10)
	for i := range text {
		text[i] = 'a' + byte(rng.IntN(26))
	}
	return saver.Typed{Type: "msgpack", Data: append([]byte{0xdc, byte(n >> 8), byte(n)}, text...)}
}

// chatPut puts turn n of a conversation: checkpoint n with the messages
// channel at version n.
func chatPut(t *testing.T, s *dynamo.Store, ref saver.CheckpointRef, n int, exp int64) {
	t.Helper()
	in := storetest.NewCheckpoint(ref, fmt.Sprintf("%04d", n))
	if n > 1 {
		in.ParentID = fmt.Sprintf("%04d", n-1)
	}
	in.ExpiresAt = exp
	storetest.SetChannel(&in, "messages", fmt.Sprintf("%04d", n), "")
	in.Blobs[0].Value = chat(n + 4)
	storetest.MustPutCheckpoint(t, s, in)
}

// mustReadChat reads checkpoints from..to of the conversation, by id, and
// checks each value.
func mustReadChat(t *testing.T, s *dynamo.Store, ref saver.CheckpointRef, from, to int) {
	t.Helper()
	for n := from; n <= to; n++ {
		tup := storetest.MustGetTuple(t, s, storetest.At(ref, fmt.Sprintf("%04d", n)))
		if len(tup.Values) != 1 || !bytes.Equal(tup.Values[0].Value.Data, chat(n+4).Data) {
			t.Fatalf("checkpoint %d: values %d, want the conversation after %d turns", n, len(tup.Values), n+4)
		}
	}
}

// storedBlobs returns the messages blobs of the thread as stored: version ->
// whether it is a patch, and its value's size.
func storedBlobs(t *testing.T, st *localstack.Stack, ref saver.CheckpointRef) (patched map[string]bool, size map[string]int) {
	t.Helper()
	patched, size, _ = storedBlobsExp(t, st, ref)
	return patched, size
}

// storedBlobsExp is storedBlobs with each blob's expiry (0: never).
func storedBlobsExp(t *testing.T, st *localstack.Stack, ref saver.CheckpointRef) (patched map[string]bool, size map[string]int, exp map[string]int64) {
	t.Helper()
	pk := dynamo.BlobItemKey(ref.Tenant, ref.ThreadID, "", "", "")["PK"]
	out, err := st.DB.Query(t.Context(), &dynamodb.QueryInput{
		TableName:                 ptr(st.Store.Table()),
		KeyConditionExpression:    ptr("PK = :pk AND begins_with(SK, :b)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": pk, ":b": &types.AttributeValueMemberS{Value: "b!"}},
		ConsistentRead:            ptr(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	patched, size, exp = map[string]bool{}, map[string]int{}, map[string]int64{}
	for _, it := range out.Items {
		v := it["version"].(*types.AttributeValueMemberS).Value
		_, patched[v] = it["chain"]
		if n, ok := it[dynamo.AttrExpiresAt].(*types.AttributeValueMemberN); ok {
			exp[v], _ = strconv.ParseInt(n.Value, 10, 64)
		}
		payload := "value"
		if patched[v] {
			payload = "patch" // a patch is never in value, which older readers would take whole
			if _, ok := it["value"]; ok {
				t.Fatalf("patch %s has a value attribute", v)
			}
		}
		size[v] = len(it[payload].(*types.AttributeValueMemberM).Value["data"].(*types.AttributeValueMemberB).Value)
	}
	return patched, size, exp
}

// TestPatchedValues: a growing value is stored as patches, each about a
// turn's growth, with one request per put as before; every version reads
// back, from a store that never saw the puts too; a store whose remembered
// value is stale writes the whole value; expiring patches take their
// chain's expiry and are stored whole when extended or pinned; a store that
// remembers nothing stores values whole; a broken chain fails the read.
func TestPatchedValues(t *testing.T) {
	st := localstack.MustStore(t)
	a := st.Store
	ref := storetest.NewRef()
	const turns = 30
	mustCount(t, st, requests{"TransactWriteItems": turns}, func() {
		for n := 1; n <= turns; n++ {
			chatPut(t, a, ref, n, 0)
		}
	})
	patched, size := storedBlobs(t, st, ref)
	whole, stored, count := 0, 0, 0
	for n := 1; n <= turns; n++ {
		v := fmt.Sprintf("%04d", n)
		whole += len(chat(n + 4).Data)
		stored += size[v]
		if patched[v] {
			count++
		}
	}
	t.Logf("%d versions: %d stored as patches; %d bytes stored, %d whole (%.2fx)", turns, count, stored, whole, float64(stored)/float64(whole))
	if count < turns-4 || stored > whole/5 {
		t.Fatalf("%d of %d versions patched, %d bytes stored for %d whole; want patches", count, turns, stored, whole)
	}
	// One BatchGetItem reads a value and its whole chain, on a second
	// process; the first remembers the value it put and reads none.
	b := dynamo.NewStore(st.DB, a.Table())
	mustCount(t, st, requests{"Query": 1, "BatchGetItem": 1}, func() { mustReadChat(t, b, ref, turns, turns) })
	mustCount(t, st, requests{"Query": 1}, func() { mustReadChat(t, a, ref, turns, turns) })
	mustReadChat(t, a, ref, 1, turns)

	// The second process reads everything; its first put is whole, and
	// once it has read the latest, its puts are patches again.
	b = dynamo.NewStore(st.DB, a.Table())
	mustReadChat(t, b, ref, 1, turns)
	chatPut(t, b, ref, turns+1, 0)
	storetest.MustGetTuple(t, b, ref)
	chatPut(t, b, ref, turns+2, 0)
	patched, _ = storedBlobs(t, st, ref)
	if patched[fmt.Sprintf("%04d", turns+1)] || !patched[fmt.Sprintf("%04d", turns+2)] {
		t.Fatalf("second store: turn %d patched %v (want whole), turn %d patched %v (want a patch)",
			turns+1, patched[fmt.Sprintf("%04d", turns+1)], turns+2, patched[fmt.Sprintf("%04d", turns+2)])
	}
	// The first store remembers turn 30: its patch's condition fails, and
	// it writes the whole value in a second request.
	mustCount(t, st, requests{"TransactWriteItems": 2}, func() { chatPut(t, a, ref, turns+3, 0) })
	patched, _ = storedBlobs(t, st, ref)
	if patched[fmt.Sprintf("%04d", turns+3)] {
		t.Fatal("a put on a stale remembered value stored a patch")
	}
	mustReadChat(t, a, ref, 1, turns+3)
	mustReadChat(t, b, ref, 1, turns+3)

	t.Run("Expiring", func(t *testing.T) {
		now := time.Now()
		c := dynamo.NewStore(st.DB, a.Table())
		c.Now = func() time.Time { return now }
		ref := storetest.NewRef()
		hour := func() int64 { return now.Add(time.Hour).Unix() }
		for n := 1; n <= 6; n++ {
			chatPut(t, c, ref, n, hour())
		}
		patched, _, exps := storedBlobsExp(t, st, ref)
		for n := 2; n <= 6; n++ {
			if v := fmt.Sprintf("%04d", n); !patched[v] || exps[v] != exps["0001"] || exps[v] == 0 {
				t.Fatalf("turn %d: patched %v, expiring at %d; want a patch expiring with turn 1 (%d)", n, patched[v], exps[v], exps["0001"])
			}
		}
		mustReadChat(t, c, ref, 1, 6)

		// 90 minutes on, a checkpoint that references turn 6 unchanged
		// outlives it: the patch is stored whole, with a later expiry.
		now = now.Add(90 * time.Minute)
		in := storetest.NewCheckpoint(ref, "0007")
		in.ParentID, in.ExpiresAt = "0006", hour()
		in.ChannelVersions["messages"] = "0006"
		storetest.MustPutCheckpoint(t, c, in)
		patched, _, exps = storedBlobsExp(t, st, ref)
		if patched["0006"] || exps["0006"] < hour() {
			t.Fatalf("turn 6 after the extension: patched %v, expiring at %d; want whole, at least %d", patched["0006"], exps["0006"], hour())
		}
		if tup := storetest.MustGetTuple(t, c, storetest.At(ref, "0007")); !bytes.Equal(tup.Values[0].Value.Data, chat(10).Data) {
			t.Fatal("checkpoint 7 reads another value")
		}

		// Turns 8 and 9 (a patch on 8); pinned, turn 9's value is stored
		// whole, forever, and reads after every other blob expired.
		chatPut(t, c, ref, 8, hour())
		chatPut(t, c, ref, 9, hour())
		if patched, _, _ := storedBlobsExp(t, st, ref); !patched["0009"] {
			t.Fatal("turn 9 is not a patch")
		}
		if err := c.SetExpiry(t.Context(), storetest.At(ref, "0009"), 0); err != nil {
			t.Fatal(err)
		}
		now = now.Add(24 * time.Hour)
		mustReadChat(t, c, ref, 9, 9)
		if patched, _, exps := storedBlobsExp(t, st, ref); patched["0009"] || exps["0009"] != 0 {
			t.Fatalf("pinned turn 9: patched %v, expiring at %d; want whole, never", patched["0009"], exps["0009"])
		}
	})
	t.Run("RememberNothing", func(t *testing.T) {
		c := dynamo.NewStore(st.DB, a.Table())
		c.RememberValues(0)
		ref := storetest.NewRef()
		for n := 1; n <= 5; n++ {
			chatPut(t, c, ref, n, 0)
			storetest.MustGetTuple(t, c, ref)
		}
		if patched, _ := storedBlobs(t, st, ref); strings.Contains(fmt.Sprint(patched), "true") {
			t.Fatalf("values stored as patches: %v", patched)
		}
	})
	// A version string used again after a delete holds other bytes: a
	// store that remembers the old bytes must not patch on them.
	t.Run("VersionReusedAfterDelete", func(t *testing.T) {
		ref := storetest.NewRef()
		for n := 1; n <= 3; n++ {
			chatPut(t, a, ref, n, 0)
		}
		other := dynamo.NewStore(st.DB, a.Table())
		storetest.MustGetTuple(t, other, ref) // remembers turn 3's bytes
		if err := a.DeleteThread(t.Context(), ref.Tenant, ref.ThreadID); err != nil {
			t.Fatal(err)
		}
		// The same versions again, with bytes of their own, in checkpoints
		// of new ids (the deleted ids are tombstoned).
		for n := 1; n <= 3; n++ {
			in := storetest.NewCheckpoint(ref, fmt.Sprintf("%04d", 10+n))
			storetest.SetChannel(&in, "messages", fmt.Sprintf("%04d", n), "")
			in.Blobs[0].Value = chat(n + 4)
			in.Blobs[0].Value.Data[100] ^= 0xff // same length, lines up, other bytes
			storetest.MustPutCheckpoint(t, a, in)
		}
		next := chat(4 + 4)
		next.Data[100] ^= 0xff
		in := storetest.NewCheckpoint(ref, "0014")
		in.ParentID = "0013"
		storetest.SetChannel(&in, "messages", "0004", "")
		in.Blobs[0].Value = next
		storetest.MustPutCheckpoint(t, other, in)
		if tup := storetest.MustGetTuple(t, a, storetest.At(ref, "0014")); !bytes.Equal(tup.Values[0].Value.Data, next.Data) {
			t.Fatal("turn 4 reads other bytes than were put")
		}
	})
	// Prune drops blobs that lifetimes entries named: a store that
	// remembers one of them must not take it for a base.
	t.Run("PruneThenPatch", func(t *testing.T) {
		ref := storetest.NewRef()
		run := func(n int) string { return map[bool]string{true: "run-a", false: "run-b"}[n <= 3] + ref.ThreadID }
		for n := 1; n <= 5; n++ {
			in := storetest.NewCheckpoint(ref, fmt.Sprintf("%04d", n))
			if n > 1 {
				in.ParentID = fmt.Sprintf("%04d", n-1)
			}
			in.Metadata["run_id"] = run(n)
			storetest.SetChannel(&in, "messages", fmt.Sprintf("%04d", n), "")
			in.Blobs[0].Value = chat(n + 4)
			storetest.MustPutCheckpoint(t, a, in) // a remembers turn 5
		}
		if err := a.DeleteForRuns(t.Context(), ref.Tenant, []string{run(5)}); err != nil {
			t.Fatal(err)
		}
		if err := a.Prune(t.Context(), ref.Tenant, []string{ref.ThreadID}, saver.PruneKeepLatest); err != nil {
			t.Fatal(err)
		}
		// Turn 6 grows from turn 5's bytes, but turn 5's blob is gone. (Its
		// parent is turn 3: turn 5 is deleted, and tombstoned.)
		in := storetest.NewCheckpoint(ref, "0006")
		in.ParentID = "0003"
		storetest.SetChannel(&in, "messages", "0006", "")
		in.Blobs[0].Value = chat(6 + 4)
		storetest.MustPutCheckpoint(t, a, in)
		if tup := storetest.MustGetTuple(t, a, storetest.At(ref, "0006")); !bytes.Equal(tup.Values[0].Value.Data, chat(10).Data) {
			t.Fatal("turn 6 reads other bytes than were put")
		}
	})
	t.Run("BrokenChain", func(t *testing.T) {
		ref := storetest.NewRef()
		for n := 1; n <= 6; n++ {
			chatPut(t, a, ref, n, 0)
		}
		if _, err := st.DB.DeleteItem(t.Context(), &dynamodb.DeleteItemInput{
			TableName: ptr(a.Table()), Key: dynamo.BlobItemKey(ref.Tenant, ref.ThreadID, "", "messages", "0003"),
		}); err != nil {
			t.Fatal(err)
		}
		_, err := a.GetTuple(t.Context(), storetest.At(ref, "0005"))
		if err == nil || !strings.Contains(err.Error(), "missing") {
			t.Fatalf("read over a broken chain: %v; want an error naming the missing value", err)
		}
		mustReadChat(t, a, ref, 1, 2)
	})
}
