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

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/dynamo"
	"github.com/saver-dev/saver/localstack"
	"github.com/saver-dev/saver/storetest"
)

// queryRecorder passes calls through and records what each Query asked for
// and returned, with the capacity DynamoDB says it consumed.
type queryRecorder struct {
	dynamo.DynamoAPI
	mu          sync.Mutex
	projections []string
	items       int
	bytes       int
	attrs       map[string]bool
	units       float64
}

func (r *queryRecorder) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := r.DynamoAPI.Query(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	proj := ""
	if in.ProjectionExpression != nil {
		proj = *in.ProjectionExpression
		for ref, name := range in.ExpressionAttributeNames {
			proj = strings.ReplaceAll(proj, ref, name)
		}
	}
	r.projections = append(r.projections, proj)
	for _, it := range out.Items {
		r.items++
		r.bytes += size(it)
		for name := range it {
			r.attrs[name] = true
		}
	}
	if c := out.ConsumedCapacity; c != nil && c.CapacityUnits != nil {
		r.units += *c.CapacityUnits
	}
	return out, nil
}

// size is an item's size as DynamoDB counts it, near enough: names and
// values.
func size(it map[string]types.AttributeValue) int {
	n := 0
	for name, v := range it {
		n += len(name)
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			n += len(v.Value)
		case *types.AttributeValueMemberB:
			n += len(v.Value)
		case *types.AttributeValueMemberN:
			n += len(v.Value)
		case *types.AttributeValueMemberM:
			n += size(v.Value)
		default:
			n++
		}
	}
	return n
}

// TestListNodesLongThread lists the nodes of a thread of 10,000 checkpoints
// with 2 KB bodies, a value and a write each (an error write on every
// hundredth): every node comes back, from Queries that project the node
// attributes only, one per 1 MB page, and no payload crosses the wire. It
// logs the requests, pages, bytes and time, against a Query of the same
// items whole.
func TestListNodesLongThread(t *testing.T) {
	if testing.Short() {
		t.Skip("puts 10,000 checkpoints: about a minute on the emulator")
	}
	const n = 10_000
	st := localstack.MustStore(t)
	ref := storetest.NewRef()
	body := saver.Typed{Type: "msgpack", Data: []byte(strings.Repeat("b", 2<<10))}
	want := make([]saver.Node, n)
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range n {
		id := fmt.Sprintf("%06d", i)
		in := storetest.NewCheckpoint(ref, id)
		in.Body = body
		in.Metadata = saver.Metadata{"source": "loop", "step": int64(i), "run_id": "run", "writes": map[string]any{"node": strings.Repeat("m", 512)}}
		if i > 0 {
			in.ParentID = fmt.Sprintf("%06d", i-1)
		}
		storetest.SetChannel(&in, "messages", id, strings.Repeat("v", 1<<10))
		writes := []saver.Write{storetest.NewWrite("task", 0, "messages", strings.Repeat("w", 512))}
		if i%100 == 0 {
			writes = append(writes, storetest.NewWrite("task", -1, saver.ChannelError, "boom"))
		}
		want[i] = saver.Node{ThreadID: ref.ThreadID, ID: id, ParentID: in.ParentID, Source: "loop", Step: int64(i), HasError: i%100 == 0}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := in.Validate(); err != nil {
				t.Error(err)
				return
			}
			if err := st.Store.PutCheckpoint(t.Context(), in); err != nil {
				t.Errorf("PutCheckpoint(%s): %v", id, err)
				return
			}
			if err := st.Store.PutWrites(t.Context(), saver.PutWrites{CheckpointRef: in.CheckpointRef, Writes: writes}); err != nil {
				t.Errorf("PutWrites(%s): %v", id, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("put %d checkpoints with their writes in %v", n, time.Since(start).Round(time.Millisecond))

	rec := &queryRecorder{DynamoAPI: st.DB, attrs: map[string]bool{}}
	s := dynamo.NewStore(rec, st.Store.Table())
	st.DBRequests.Reset()
	start = time.Now()
	nodes, err := s.ListNodes(t.Context(), ref.Tenant, ref.ThreadID)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	storetest.SortNodes(nodes)
	if len(nodes) != n {
		t.Fatalf("%d nodes, want %d", len(nodes), n)
	}
	for i := range nodes {
		if !nodeEqual(nodes[i], want[i]) {
			t.Fatalf("node %d = %+v, want %+v", i, nodes[i], want[i])
		}
	}
	for _, payload := range []string{"checkpoint", "value", "metadata", "channel_versions", "task_path", "channel"} {
		if rec.attrs[payload] {
			t.Fatalf("ListNodes read attribute %q (read %v)", payload, rec.attrs)
		}
	}
	for _, p := range rec.projections {
		if p == "" {
			t.Fatal("ListNodes sent a Query without a projection")
		}
	}
	queries := st.DBRequests.Snapshot()["Query"]
	if got := st.DBRequests.Total(); got != queries || queries != int64(len(rec.projections)) {
		t.Fatalf("ListNodes sent %v, want Queries only", st.DBRequests.Snapshot())
	}

	// The same items read whole, as a Query without a projection does.
	whole := &queryRecorder{DynamoAPI: st.DB, attrs: map[string]bool{}}
	in := &dynamodb.QueryInput{
		TableName:                 ptr(s.Table()),
		KeyConditionExpression:    ptr("PK = :pk AND begins_with(SK, :c)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": dynamo.CheckpointItemKey(ref.Tenant, ref.ThreadID, "", "x")["PK"], ":c": &types.AttributeValueMemberS{Value: "c!"}},
		ConsistentRead:            ptr(true),
	}
	start = time.Now()
	for {
		out, err := whole.Query(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	wholeElapsed := time.Since(start)
	if rec.items != whole.items {
		t.Fatalf("ListNodes read %d items, the whole Query %d", rec.items, whole.items)
	}
	if rec.bytes*10 > whole.bytes {
		t.Fatalf("ListNodes read %d bytes of %d: more than a tenth", rec.bytes, whole.bytes)
	}
	pages := (whole.bytes + 1<<20 - 1) / (1 << 20)
	t.Logf("ListNodes of %d checkpoints (%d items): %d Query requests in %v; %.1f MB projected of %.1f MB whole (%d pages of 1 MB); read units %.0f",
		n, rec.items, queries, elapsed.Round(time.Millisecond), float64(rec.bytes)/1e6, float64(whole.bytes)/1e6, pages, rec.units)
	t.Logf("the same items whole: %d Query requests in %v, read units %.0f", len(whole.projections), wholeElapsed.Round(time.Millisecond), whole.units)
	if int(queries) > pages+1 {
		t.Fatalf("ListNodes sent %d Queries for %d MB of items", queries, pages)
	}
}

func nodeEqual(a, b saver.Node) bool {
	return a.ThreadID == b.ThreadID && a.NS == b.NS && a.ID == b.ID && a.ParentID == b.ParentID &&
		a.Source == b.Source && a.Step == b.Step && a.HasError == b.HasError && a.HasInterrupt == b.HasInterrupt &&
		len(a.Parents) == 0 && len(b.Parents) == 0
}
