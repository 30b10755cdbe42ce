//go:build integration

package dynamo_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/dynamo"
	"github.com/saver-dev/saver/localstack"
	"github.com/saver-dev/saver/s3offload"
	"github.com/saver-dev/saver/storetest"
)

// TestBlobOutlivesItsWriter runs a session thread (each checkpoint lives an
// hour) for four hours, a put every ten minutes, each referencing the blob
// of channel "doc" that the first put wrote and bringing a new "msg": the
// old blob keeps resolving long after the hour it was written for. Written
// for twice its checkpoint's remaining lifetime, it is extended only when a
// put would outlive it, by twice the put's remaining lifetime (one request
// more, as simulated here with the domain's rule), about once an hour;
// its S3 object's expiry tag follows, and when the thread goes idle it
// lives as long as the last checkpoint and no longer. Every payload is
// offloaded, so that the tags are exercised.
func TestBlobOutlivesItsWriter(t *testing.T) {
	st := localstack.MustStore(t)
	st.Store.OffloadThreshold = 0
	clock := storetest.NewClock()
	s := withClock(st.Store, clock.Now)
	t0 := clock.Now()
	ref := storetest.NewRef()
	doc := strings.Repeat("d", 1000)

	var (
		last       saver.PutCheckpoint
		docExpiry  int64 // as the rule says it should be
		extensions int
		puts       int
	)
	st.DBRequests.Reset()
	for at := time.Duration(0); at <= 4*time.Hour; at += 10 * time.Minute {
		clock.Advance(at - clock.Now().Sub(t0))
		id := fmt.Sprintf("%04d", puts)
		in := storetest.Expiring(storetest.NewCheckpoint(ref, id), clock.Now().Add(time.Hour).Unix())
		if puts == 0 {
			storetest.SetChannel(&in, "doc", "1", doc)
			docExpiry = 2*in.ExpiresAt - clock.Now().Unix() // new blobs live twice the remaining lifetime
		} else {
			in.ParentID = last.ID
			in.ChannelVersions["doc"] = "1"
			if next, write := saver.ExtendedBlobExpiry(in.ExpiresAt, docExpiry, clock.Now()); write {
				docExpiry = next
				extensions++
			}
		}
		storetest.SetChannel(&in, "msg", id, "message "+id)
		storetest.MustPutCheckpoint(t, s, in)
		last = in
		puts++
	}
	if got, want := st.DBRequests.Snapshot()["TransactWriteItems"], int64(puts+extensions); got != want || st.DBRequests.Total() != want {
		t.Fatalf("%d puts with %d extensions sent %v, want %d TransactWriteItems", puts, extensions, st.DBRequests.Snapshot(), want)
	}
	t.Logf("%d puts over 4 hours, %d of them extended the old blob", puts, extensions)
	if extensions < 2 || extensions > 4 {
		t.Fatalf("%d extensions in 4 hours of a 1-hour lifetime", extensions)
	}
	mustBlobExpiry(t, st.Store, ref, "doc", "1", docExpiry)
	mustObjectExpiry(t, st, ref, "doc", "1", docExpiry)

	want := storetest.WantTuple(last)
	want.Values = append(want.Values, saver.Blob{Channel: "doc", Version: "1", Value: storetest.Typed(doc)})
	for _, at := range []time.Time{clock.Now(), time.Unix(last.ExpiresAt-1, 0)} {
		clock.Advance(at.Sub(clock.Now()))
		storetest.MustEqualTuple(t, storetest.MustGetTuple(t, s, ref), want)
	}
	clock.Advance(time.Second)
	storetest.MustNotFind(t, s, ref)
}

// TestPinItems pins a session checkpoint and checks its items as stored:
// the checkpoint, its blobs (its own and its parent's) and its writes lose
// their expiry, their S3 objects their expiry tags, and the parent keeps
// its own. Every payload is offloaded.
func TestPinItems(t *testing.T) {
	st := localstack.MustStore(t)
	st.Store.OffloadThreshold = 0
	clock := storetest.NewClock()
	s := withClock(st.Store, clock.Now)
	ref := storetest.NewRef()
	exp := clock.Now().Add(time.Hour).Unix()
	first := storetest.Expiring(storetest.NewCheckpoint(ref, "0001"), exp)
	storetest.SetChannel(&first, "a", "1", "a")
	storetest.MustPutCheckpoint(t, s, first)
	second := storetest.Expiring(storetest.NewCheckpoint(ref, "0002"), exp)
	second.ParentID, second.ChannelVersions["a"] = first.ID, "1"
	storetest.SetChannel(&second, "b", "2", "b")
	storetest.MustPutCheckpoint(t, s, second)
	w := storetest.NewWrite("task", 0, "ch", "w")
	storetest.MustPutExpiringWrites(t, s, second.CheckpointRef, exp, w)

	storetest.MustSetExpiry(t, s, second.CheckpointRef, 0)
	mustExpiry(t, st.Store, dynamo.CheckpointItemKey(ref.Tenant, ref.ThreadID, "", "0002"), 0)
	mustExpiry(t, st.Store, dynamo.CheckpointItemKey(ref.Tenant, ref.ThreadID, "", "0001"), exp)
	for _, b := range [][2]string{{"a", "1"}, {"b", "2"}} {
		mustBlobExpiry(t, st.Store, ref, b[0], b[1], 0)
		mustObjectExpiry(t, st, ref, b[0], b[1], 0)
	}
	out, err := st.DB.Query(t.Context(), &dynamodb.QueryInput{
		TableName:                 ptr(st.Store.Table()),
		KeyConditionExpression:    ptr("PK = :pk"),
		FilterExpression:          ptr("kind = :w"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": dynamo.CheckpointItemKey(ref.Tenant, ref.ThreadID, "", "x")["PK"], ":w": &types.AttributeValueMemberS{Value: "write"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 1 || out.Items[0][dynamo.AttrExpiresAt] != nil {
		t.Fatalf("writes after the pin: %v, want one without expiry", out.Items)
	}

	clock.Advance(100 * 365 * 24 * time.Hour)
	storetest.MustNotFind(t, s, first.CheckpointRef)
	want := storetest.WantTuple(second, w)
	want.ExpiresAt = 0
	want.Values = append(want.Values, first.Blobs...)
	storetest.MustEqualTuple(t, storetest.MustGetTuple(t, s, ref), want)
}

// TestSweeperRemovesExpired sweeps a thread whose first checkpoint and
// its write expired while DynamoDB still holds their items (its TTL deletes
// them within days): their objects go, those of live items stay; the blob
// the expired checkpoint brought lives an hour longer (twice its
// checkpoint's remaining lifetime) and goes at the next sweep after that.
// The live checkpoint reads back whole throughout.
func TestSweeperRemovesExpired(t *testing.T) {
	st := localstack.MustStore(t)
	st.Store.OffloadThreshold = 0
	clock := storetest.NewClock()
	s := withClock(st.Store, clock.Now)
	sweeper := s3offload.NewSweeper(st.Offload, s)
	ref := storetest.NewRef()
	soon := clock.Now().Add(time.Hour).Unix()
	gone := storetest.Expiring(storetest.NewCheckpoint(ref, "0001"), soon)
	storetest.SetChannel(&gone, "a", "1", "expires after 0001")
	storetest.MustPutCheckpoint(t, s, gone)
	storetest.MustPutExpiringWrites(t, s, gone.CheckpointRef, soon, storetest.NewWrite("task", 0, "ch", "expires with 0001"))
	live := storetest.Expiring(storetest.NewCheckpoint(ref, "0002"), 0)
	storetest.SetChannel(&live, "b", "2", "lives")
	storetest.MustPutCheckpoint(t, s, live)
	if got := len(st.Objects(t)); got != 5 { // two bodies, two values, a write
		t.Fatalf("%d objects, want 5", got)
	}

	st.Offload.Now = func() time.Time { return time.Now().Add(3 * time.Hour) } // the period has closed
	defer func() { st.Offload.Now = time.Now }()
	for _, step := range []struct{ deleted, left int }{{2, 3}, {1, 2}} {
		clock.Advance(time.Hour)
		res, err := sweeper.Sweep(t.Context(), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if res.Deleted != step.deleted || len(st.Objects(t)) != step.left {
			t.Fatalf("sweep %+v left %d objects; want %d deleted, %d left", res, len(st.Objects(t)), step.deleted, step.left)
		}
		storetest.MustEqualTuple(t, storetest.MustGetTuple(t, s, ref), storetest.WantTuple(live))
	}
}

// mustObjectExpiry checks the expires-at tag of a blob's offloaded object
// ("" when it never expires).
func mustObjectExpiry(t *testing.T, st *localstack.Stack, ref saver.CheckpointRef, channel, version string, want int64) {
	t.Helper()
	out, err := st.DB.GetItem(t.Context(), &dynamodb.GetItemInput{
		TableName: ptr(st.Store.Table()), Key: dynamo.BlobItemKey(ref.Tenant, ref.ThreadID, ref.NS, channel, version), ConsistentRead: ptr(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := out.Item["value"].(*types.AttributeValueMemberM)
	key, _ := v.Value["ref"].(*types.AttributeValueMemberS)
	if key == nil {
		t.Fatalf("blob %s@%s is not offloaded: %v", channel, version, out.Item)
	}
	tags, err := st.S3.GetObjectTagging(t.Context(), &s3.GetObjectTaggingInput{Bucket: ptr(st.Offload.Bucket()), Key: &key.Value})
	if err != nil {
		t.Fatal(err)
	}
	got := ""
	for _, tag := range tags.TagSet {
		if *tag.Key == "expires-at" {
			got = *tag.Value
		}
	}
	if w := fmt.Sprint(want); (want == 0 && got != "") || (want != 0 && got != w) {
		t.Fatalf("object of blob %s@%s tagged expires-at=%q, want %d", channel, version, got, want)
	}
}

// capacityRecorder passes calls through, asking for and adding up the
// capacity of each write request.
type capacityRecorder struct {
	dynamo.DynamoAPI
	units float64
}

func (r *capacityRecorder) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := r.DynamoAPI.TransactWriteItems(ctx, in, opts...)
	if err == nil {
		r.units += capacity(out.ConsumedCapacity)
	}
	return out, err
}

func (r *capacityRecorder) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := r.DynamoAPI.PutItem(ctx, in, opts...)
	if err == nil && out.ConsumedCapacity != nil {
		r.units += capacity([]types.ConsumedCapacity{*out.ConsumedCapacity})
	}
	return out, err
}

// TestMeasureBlobGuards pins what keeping blob lifetimes costs a put of a
// 2 KB checkpoint bringing one 1 KB blob and referencing ten others (of
// 1 KB), against the same put referencing none, with and without an
// expiry: the namespace's lifetimes item is updated in the put's
// transaction, conditioned on the entries of the referenced blobs, so
// referencing blobs adds no request and no write unit: one
// TransactWriteItems of 18 units in every case (as the local stack counts
// them), logged for the record.
func TestMeasureBlobGuards(t *testing.T) {
	st := localstack.MustStore(t)
	rec := &capacityRecorder{DynamoAPI: st.DB}
	clock := storetest.NewClock()
	s := dynamo.NewStore(rec, st.Store.Table())
	s.Now = clock.Now
	expiring := clock.Now().Add(time.Hour).Unix()
	for _, tc := range []struct {
		name  string
		exp   int64
		refs  int
		units float64
	}{
		{"no blob referenced", 0, 0, 18},
		{"default policy, 10 referenced", 0, 10, 18},
		{"expiring, no blob referenced", expiring, 0, 18},
		{"expiring, 10 referenced", expiring, 10, 18},
	} {
		ref := storetest.NewRef()
		parent := storetest.Expiring(storetest.NewCheckpoint(ref, "0001"), tc.exp)
		for i := range 10 {
			storetest.SetChannel(&parent, fmt.Sprint("ch", i), "1", strings.Repeat("v", 1<<10))
		}
		storetest.MustPutCheckpoint(t, s, parent)
		in := storetest.Expiring(storetest.NewCheckpoint(ref, "0002"), tc.exp)
		in.ParentID = parent.ID
		in.Body = saver.Typed{Type: "msgpack", Data: []byte(strings.Repeat("b", 2<<10))}
		for i := range tc.refs {
			in.ChannelVersions[fmt.Sprint("ch", i)] = "1"
		}
		storetest.SetChannel(&in, "new", "2", strings.Repeat("n", 1<<10))
		st.DBRequests.Reset()
		rec.units = 0
		storetest.MustPutCheckpoint(t, s, in)
		t.Logf("%-34s %v  %.0f capacity units", tc.name, st.DBRequests.Snapshot(), rec.units)
		if got := st.DBRequests.Snapshot()["TransactWriteItems"]; got != 1 || st.DBRequests.Total() != 1 || rec.units != tc.units {
			t.Fatalf("%s: the put sent %v for %.0f capacity units, want one TransactWriteItems for %.0f", tc.name, st.DBRequests.Snapshot(), rec.units, tc.units)
		}
	}
}
