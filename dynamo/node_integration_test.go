//go:build integration

package dynamo_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
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

// TestListNodesLongThread lists the nodes of a thread of n checkpoints
// with 2 KB bodies, a value and a write each (an error write on every
// hundredth): every node comes back, from its tree index alone, packed
// into pages by the second tree query, in at most 2 Queries of at most
// 1 + n/1,000 items. It logs the requests, bytes, read units and time,
// against a read of the same nodes from the checkpoints and writes, as
// before the index. n is 2,500 in make test (past the 1,000 that make a
// pack, twice over), and 10,000 in make soak (SAVER_TREE_CHECKPOINTS),
// which takes some minutes under -race on 2 cores.
func TestListNodesLongThread(t *testing.T) {
	if testing.Short() {
		t.Skip("puts thousands of checkpoints")
	}
	n := 2_500
	if v := os.Getenv("SAVER_TREE_CHECKPOINTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("SAVER_TREE_CHECKPOINTS=%q: want a number of checkpoints", v)
		}
	}
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

	// The first tree query finds no marker: it reads the items as before
	// the index, finds the index whole and puts the marker.
	st.DBRequests.Reset()
	start = time.Now()
	if _, err := st.Store.ListNodes(t.Context(), ref.Tenant, ref.ThreadID); err != nil {
		t.Fatal(err)
	}
	t.Logf("first ListNodes (no marker yet): %v in %v", st.DBRequests.Snapshot(), time.Since(start).Round(time.Millisecond))
	// The next finds 10,000 singles and packs them into pages (treepage.go).
	st.DBRequests.Reset()
	start = time.Now()
	if _, err := st.Store.ListNodes(t.Context(), ref.Tenant, ref.ThreadID); err != nil {
		t.Fatal(err)
	}
	t.Logf("second ListNodes (packs): %v in %v", st.DBRequests.Snapshot(), time.Since(start).Round(time.Millisecond))

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
	for _, p := range rec.projections {
		if p != "node, expires_at, page, pid, pages, pv" {
			t.Fatalf("ListNodes sent a Query projected on %q", p)
		}
	}
	// The index alone, packed: the marker and a page per 300 KB of
	// entries (a node per checkpoint, a flag per error).
	if limit := 1 + n/1000; rec.items > limit {
		t.Fatalf("ListNodes read %d items, want %d at most", rec.items, limit)
	}
	queries := st.DBRequests.Snapshot()["Query"]
	if got := st.DBRequests.Total(); got != queries || queries != int64(len(rec.projections)) {
		t.Fatalf("ListNodes sent %v, want Queries only", st.DBRequests.Snapshot())
	}
	// About 100 bytes an entry: 1 MB at 10,000, two Query pages at most
	// (checkpoints/1,000 is the bound).
	if queries > 2 {
		t.Fatalf("ListNodes of %d checkpoints sent %d Queries, want 2 at most", n, queries)
	}

	// The same nodes read from the checkpoints and writes, as before the
	// index.
	whole := &queryRecorder{DynamoAPI: st.DB, attrs: map[string]bool{}}
	st.DBRequests.Reset()
	start = time.Now()
	scanned, err := dynamo.NewStore(whole, st.Store.Table()).ScanNodes(t.Context(), ref.Tenant, ref.ThreadID)
	if err != nil {
		t.Fatal(err)
	}
	scanElapsed := time.Since(start)
	if len(scanned) != n {
		t.Fatalf("read %d nodes from the items", len(scanned))
	}
	t.Logf("ListNodes of %d checkpoints: %d Query requests, %d items, %.2f MB, %.0f read units, in %v", n, queries, rec.items, float64(rec.bytes)/1e6, rec.units, elapsed.Round(time.Millisecond))
	t.Logf("before the index, from the items: %d Query requests, %d items, %.2f MB projected, %.0f read units, in %v",
		st.DBRequests.Snapshot()["Query"], whole.items, float64(whole.bytes)/1e6, whole.units, scanElapsed.Round(time.Millisecond))
}

func nodeEqual(a, b saver.Node) bool {
	return a.ThreadID == b.ThreadID && a.NS == b.NS && a.ID == b.ID && a.ParentID == b.ParentID &&
		a.Source == b.Source && a.Step == b.Step && a.HasError == b.HasError && a.HasInterrupt == b.HasInterrupt &&
		len(a.Parents) == 0 && len(b.Parents) == 0
}
