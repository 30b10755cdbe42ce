//go:build integration

package faults_test

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/saver-dev/saver/dynamo"
	"github.com/saver-dev/saver/faults"
	"github.com/saver-dev/saver/localstack"
	"github.com/saver-dev/saver/s3offload"
)

// rig is the dynamo store with S3 offload on the local AWS stack, twice: once
// behind the faults transport (what the API serves) and once with clean
// clients on the same table and bucket (the reference reader).
type rig struct {
	ft    *faults.Transport
	api   *client // the store behind faults
	clean *client // the same data, read without faults
}

// newRig builds a rig; threshold is the offload size (0: the default);
// fast caps the SDK's backoff at a millisecond (same attempts and rules).
func newRig(t *testing.T, threshold int, fast bool) *rig {
	t.Helper()
	st := localstack.MustStore(t)
	if threshold > 0 {
		st.Store.OffloadThreshold = threshold
	}
	ft := faults.New(awshttp.NewBuildableClient().GetTransport())
	cfg := localstack.MustConfig(t)
	cfg.HTTPClient = ft.Client()
	var dbOpts []func(*dynamodb.Options)
	var s3Opts []func(*s3.Options)
	if fast {
		dbOpts = append(dbOpts, fastRetries)
		s3Opts = append(s3Opts, func(o *s3.Options) {
			o.Retryer = retry.AddWithMaxBackoffDelay(o.Retryer, time.Millisecond)
		})
	}
	faulty := dynamo.NewStore(dynamo.NewClient(cfg, nil, dbOpts...), st.Store.Table())
	s3c := s3offload.NewClient(cfg)
	if len(s3Opts) > 0 {
		s3c = s3.New(s3c.Options(), s3Opts...)
	}
	faulty.Offload = s3offload.NewStore(s3c, st.Offload.Bucket())
	faulty.OffloadThreshold = st.Store.OffloadThreshold
	return &rig{ft: ft, api: service(t, faulty), clean: service(t, st.Store)}
}

// retrying sends a request the way the Python client does: 503s are
// retried (up to 6 tries); it returns the final answer and the 503s seen.
func retrying(send func() answer) (answer, int) {
	var surfaced int
	for try := 1; ; try++ {
		a := send()
		if a.Status != http.StatusServiceUnavailable || try == 6 {
			return a, surfaced
		}
		surfaced++
	}
}

// TestThrottledWorkloadSucceeds runs puts, writes, gets and lists from 8
// goroutines while 30% of DynamoDB requests are throttled, 5% refused for
// provisioned throughput, 5% answered 500 and 10% of S3 requests slowed
// down; the SDK's retries absorb nearly all of it, and every acknowledged
// put and write is then read back whole by a reader without faults.
func TestThrottledWorkloadSucceeds(t *testing.T) {
	r := newRig(t, 1024, true)
	r.ft.Set(
		faults.Rule{Service: faults.DynamoDB, Fault: faults.Throttle, Rate: 0.30},
		faults.Rule{Service: faults.DynamoDB, Fault: faults.Provisioned, Rate: 0.05},
		faults.Rule{Service: faults.DynamoDB, Fault: faults.ServerError, Rate: 0.05},
		faults.Rule{Service: faults.S3, Fault: faults.Throttle, Rate: 0.10},
	)
	const workers, steps = 8, 6
	var (
		mu       sync.Mutex
		want     = map[[2]string]string{} // (thread, id) -> summary read through the faults
		surfaced int
		wg       sync.WaitGroup
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			thread := fmt.Sprintf("throttled-%d-%s", w, localstack.Name(""))
			parent := ""
			for i := range steps {
				id := fmt.Sprintf("%04d", i)
				// Every third checkpoint has a blob big enough for S3.
				size := 10
				if i%3 == 2 {
					size = 2048
				}
				a, n := retrying(func() answer { return r.api.put(thread, checkpointBody(id, parent, 4, size)) })
				if a.Status != http.StatusOK {
					t.Errorf("put %s/%s: %d %v", thread, id, a.Status, a.Body)
					return
				}
				b, m := retrying(func() answer { return r.api.writes(thread, writesBody(id, "task", 3, size)) })
				if b.Status != http.StatusNoContent {
					t.Errorf("writes %s/%s: %d %v", thread, id, b.Status, b.Body)
					return
				}
				g, k := retrying(func() answer { return r.api.get(thread, id) })
				if g.Status != http.StatusOK {
					t.Errorf("get %s/%s: %d %v", thread, id, g.Status, g.Body)
					return
				}
				mu.Lock()
				surfaced += n + m + k
				want[[2]string{thread, id}] = tupleSummary(t, g.Body)
				mu.Unlock()
				parent = id
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	st := r.ft.Stats()
	r.ft.Clear()
	// Read back without faults: every put whole, with its 4 values and 3 writes.
	for key, summary := range want {
		thread, id := key[0], key[1]
		g := r.clean.get(thread, id)
		mustStatus(t, "clean get "+thread+"/"+id, g, http.StatusOK)
		got := tupleSummary(t, g.Body)
		if got != summary {
			t.Errorf("%s/%s: read with faults %q, without %q", thread, id, summary, got)
		}
		vals, _ := g.Body["values"].([]any)
		ws, _ := g.Body["writes"].([]any)
		if len(vals) != 4 || len(ws) != 3 {
			t.Errorf("%s/%s: %d values and %d writes, want 4 and 3: %s", thread, id, len(vals), len(ws), got)
		}
	}
	if st.Injected["dynamodb:throttle"] == 0 || st.Injected["s3:throttle"] == 0 {
		t.Fatalf("no faults injected: %+v", st)
	}
	t.Logf("FAULTS: %d DynamoDB + %d S3 requests, %d faults injected %v; %d surfaced to the caller as 503 and retried; "+
		"%d checkpoints acknowledged, %d read back whole, 0 lost",
		st.Requests["dynamodb"], st.Requests["s3"], st.Total(), st.Injected, surfaced, len(want), len(want))
}

// TestExhaustedRetriesLeaveNothingHalfWritten fails a put or a write past the
// SDK's retries at each point of its requests, checks the API answers 503
// with Retry-After, and that after recovery get and list show either the
// whole checkpoint with its blobs and writes, or nothing.
func TestExhaustedRetriesLeaveNothingHalfWritten(t *testing.T) {
	type tc struct {
		name      string
		threshold int // offload size
		blobs     int // blobs of the put
		size      int // bytes per blob and per write
		writes    int // writes of the put_writes, 0: a put is tested
		rules     []faults.Rule
		special   bool // the last write is to a special channel (an item of its own)
	}
	all := func(service string, fault faults.Fault) []faults.Rule {
		return []faults.Rule{{Service: service, Fault: fault, Rate: 1}}
	}
	// skip lets the first n requests of op through, then fails every one.
	skip := func(service, op string, n int64) []faults.Rule {
		return []faults.Rule{{Service: service, Op: op, Fault: faults.ServerError, Rate: 1, Skip: n}}
	}
	tests := []tc{
		{"put/throttled", 0, 5, 10, 0, all(faults.DynamoDB, faults.Throttle), false},
		{"put/provisioned", 0, 5, 10, 0, all(faults.DynamoDB, faults.Provisioned), false},
		{"put/500", 0, 5, 10, 0, all(faults.DynamoDB, faults.ServerError), false},
		{"put/down", 0, 5, 10, 0, all(faults.DynamoDB, faults.Down), false},
		// 150 blobs take two transactions: the first lands, the second
		// (50 blobs and the checkpoint) fails.
		{"put/second-transaction", 0, 150, 10, 0, skip(faults.DynamoDB, "TransactWriteItems", 1), false},
		// Offloaded: the S3 objects fail, or they land and the item fails.
		{"put/offload-s3-fails", 1024, 4, 2048, 0, all(faults.S3, faults.Throttle), false},
		{"put/offload-s3-third-object-fails", 1024, 4, 2048, 0, skip(faults.S3, "PUT", 2), false},
		{"put/offload-item-fails", 1024, 4, 2048, 0, all(faults.DynamoDB, faults.Throttle), false},
		{"writes/throttled", 0, 3, 10, 3, all(faults.DynamoDB, faults.Throttle), false},
		{"writes/offload-s3-fails", 1024, 3, 2048, 3, all(faults.S3, faults.ServerError), false},
		// Two objects: the special write's, then the bundle's of the others.
		{"writes/offload-second-object-fails", 1024, 3, 2048, 3, skip(faults.S3, "PUT", 1), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, tt.threshold, true)
			thread := "exhausted-" + localstack.Name("")
			put := checkpointBody("0001", "", tt.blobs, tt.size)
			writes := writesBody("0001", "task", tt.writes, tt.size)
			if tt.special {
				ws := writes["writes"].([]map[string]any)
				ws[len(ws)-1]["idx"], ws[len(ws)-1]["channel"] = -1, "__error__"
			}
			if tt.writes > 0 {
				mustStatus(t, "put", r.api.put(thread, put), http.StatusOK)
			}

			r.ft.Set(tt.rules...)
			var a answer
			if tt.writes > 0 {
				a = r.api.writes(thread, writes)
			} else {
				a = r.api.put(thread, put)
			}
			mustUnavailable(t, "the failing call", a)
			if a.Elapsed > 30*time.Second {
				t.Fatalf("503 after %v, past the request timeout", a.Elapsed)
			}
			injected := r.ft.Stats().Total()
			r.ft.Clear()

			// After recovery: all or nothing, through the API and through a
			// reader that never saw a fault.
			for _, c := range []*client{r.api, r.clean} {
				g := c.get(thread, "0001")
				l := c.list(thread)
				mustStatus(t, "list", l, http.StatusOK)
				tuples, _ := l.Body["tuples"].([]any)
				if tt.writes == 0 {
					if g.Status != http.StatusNotFound || g.Code != "not_found" || len(tuples) != 0 {
						t.Fatalf("failed put is visible: get %d %v, list %d tuples", g.Status, g.Body, len(tuples))
					}
					continue
				}
				mustStatus(t, "get", g, http.StatusOK)
				if ws, _ := g.Body["writes"].([]any); len(ws) != 0 {
					t.Fatalf("failed put_writes of %d writes left %d visible (want all or none): %s",
						tt.writes, len(ws), tupleSummary(t, g.Body))
				}
				if len(tuples) != 1 {
					t.Fatalf("list: %d tuples, want 1", len(tuples))
				}
				if ws, _ := tuples[0].(map[string]any)["writes"].([]any); len(ws) != 0 {
					t.Fatalf("list shows %d of the failed %d writes", len(ws), tt.writes)
				}
			}

			// The retry the client makes next completes the whole thing.
			if tt.writes > 0 {
				mustStatus(t, "writes again", r.api.writes(thread, writes), http.StatusNoContent)
			} else {
				mustStatus(t, "put again", r.api.put(thread, put), http.StatusOK)
			}
			g := r.clean.get(thread, "0001")
			mustStatus(t, "get after retry", g, http.StatusOK)
			vals, _ := g.Body["values"].([]any)
			ws, _ := g.Body["writes"].([]any)
			if len(vals) != tt.blobs || len(ws) != tt.writes {
				t.Fatalf("after the retry: %d values and %d writes, want %d and %d", len(vals), len(ws), tt.blobs, tt.writes)
			}
			t.Logf("%s: %d faults injected, API answered 503 (Retry-After %s) in %v; nothing visible until the retry made it whole",
				tt.name, injected, a.RetryAfter, a.Elapsed.Round(time.Millisecond))
		})
	}
}

// TestReadsDuringOutage: with DynamoDB or S3 refusing connections, reads of a
// stored checkpoint answer 503 (not 500, not a hang) and the data is intact
// once the outage ends.
func TestReadsDuringOutage(t *testing.T) {
	r := newRig(t, 1024, true)
	thread := "outage-" + localstack.Name("")
	mustStatus(t, "put", r.api.put(thread, checkpointBody("0001", "", 4, 2048)), http.StatusOK)
	mustStatus(t, "writes", r.api.writes(thread, writesBody("0001", "task", 2, 2048)), http.StatusNoContent)
	before := tupleSummary(t, r.api.get(thread, "0001").Body)
	for _, service := range []string{faults.DynamoDB, faults.S3} {
		r.ft.Set(faults.Rule{Service: service, Fault: faults.Down, Rate: 1})
		mustUnavailable(t, service+" down: get", r.api.get(thread, "0001"))
		mustUnavailable(t, service+" down: latest", r.api.get(thread, ""))
		mustUnavailable(t, service+" down: list", r.api.list(thread))
		r.ft.Clear()
		g := r.api.get(thread, "0001")
		mustStatus(t, "get after "+service+" is back", g, http.StatusOK)
		if after := tupleSummary(t, g.Body); after != before {
			t.Fatalf("after the %s outage: %s, before %s", service, after, before)
		}
	}
}

// TestProductionBackoffBounded: with the store's real retry policy (no test
// shortcut), a request whose every try is throttled still gets its 503
// within the API's request timeout.
func TestProductionBackoffBounded(t *testing.T) {
	r := newRig(t, 0, false)
	r.ft.Set(faults.Rule{Service: faults.DynamoDB, Fault: faults.Throttle, Rate: 1})
	a := r.api.put("bounded-"+localstack.Name(""), checkpointBody("0001", "", 2, 10))
	mustUnavailable(t, "put", a)
	st := r.ft.Stats()
	if st.Requests["dynamodb"] != dynamo.MaxAttempts {
		t.Fatalf("%d tries, want %d", st.Requests["dynamodb"], dynamo.MaxAttempts)
	}
	if a.Elapsed >= 30*time.Second {
		t.Fatalf("503 after %v: past the 30s request timeout", a.Elapsed)
	}
	t.Logf("every try throttled: %d tries, 503 after %v (request timeout 30s)", dynamo.MaxAttempts, a.Elapsed.Round(time.Millisecond))
}

// TestLargePutWritesAllOrNothing fails a put_writes too large for one
// DynamoDB transaction (150 writes, as a node Sending to 150 workers makes;
// inline, offloaded, and with an error write alongside) at each of its
// requests in turn, past the retries. LangGraph takes a task with any pending
// write for done and applies only the writes it finds, so a partial set left
// visible would silently drop the rest on resume: after each failure the
// writes must be all there or none, and the retry must make them whole.
func TestLargePutWritesAllOrNothing(t *testing.T) {
	tests := []struct {
		name  string
		size  int  // bytes per write
		error bool // an error write (negative idx) in the same put
	}{
		{"inline", 10, false},
		{"offloaded", 3000, false},
		{"with-error-write", 10, true},
	}
	const n = 150
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, 0, true)
			body := writesBody("0001", "fan", n, tt.size)
			want := n
			if tt.error {
				ws := body["writes"].([]map[string]any)
				body["writes"] = append(ws, map[string]any{
					"task_id": "fan", "task_path": "~", "idx": -1, "channel": "__error__", "value": typed("boom", 0),
				})
				want++
			}
			for skip := int64(0); ; skip++ {
				if skip > 10 {
					t.Fatalf("the put_writes still fails with the first %d requests let through", skip)
				}
				thread := fmt.Sprintf("large-writes-%d-%s", skip, localstack.Name(""))
				mustStatus(t, "put", r.api.put(thread, checkpointBody("0001", "", 3, 10)), http.StatusOK)
				r.ft.Set(faults.Rule{Fault: faults.ServerError, Rate: 1, Skip: skip})
				a := r.api.writes(thread, body)
				r.ft.Clear()
				g := r.clean.get(thread, "0001")
				mustStatus(t, "get", g, http.StatusOK)
				ws, _ := g.Body["writes"].([]any)
				if a.Status == http.StatusNoContent {
					if len(ws) != want {
						t.Fatalf("acknowledged put_writes of %d writes shows %d", want, len(ws))
					}
					t.Logf("%s: the put_writes takes %d requests; failing each left nothing visible", tt.name, skip)
					return
				}
				mustUnavailable(t, fmt.Sprintf("put_writes failing after %d requests", skip), a)
				if len(ws) != 0 && len(ws) != want {
					t.Fatalf("a put_writes of %d writes failing after %d requests (503) left %d visible; want all or none",
						want, skip, len(ws))
				}
				mustStatus(t, "writes again", r.api.writes(thread, body), http.StatusNoContent)
				if ws, _ := r.clean.get(thread, "0001").Body["writes"].([]any); len(ws) != want {
					t.Fatalf("after the retry: %d writes, want %d", len(ws), want)
				}
			}
		})
	}
}

// TestConflictsAndUnprocessedAreRetried gives DynamoDB's answers no
// emulator gives: 30% of requests cancelled by a concurrent transaction
// (TransactionConflict) and 50% of batches left wholly unprocessed. Puts of
// two transactions, put_writes, reads of 150 values (two BatchGetItems),
// copies and deletes (BatchWriteItem) all succeed, and what was put reads
// back whole, without faults, from the copy.
func TestConflictsAndUnprocessedAreRetried(t *testing.T) {
	r := newRig(t, 0, true)
	r.ft.Set(
		// The first transaction always meets a conflict: the run makes
		// about a dozen writes a conflict can reach (a put and its
		// tombstone checks are one transaction), so at 0.3 alone a run
		// could meet none and test nothing of it (a CI run did).
		faults.Rule{Service: faults.DynamoDB, Op: "TransactWriteItems", Fault: faults.Conflict, Count: 1, Rate: 1},
		faults.Rule{Service: faults.DynamoDB, Fault: faults.Conflict, Rate: 0.3},
		faults.Rule{Service: faults.DynamoDB, Fault: faults.Unprocessed, Rate: 0.5},
	)
	const threads = 4
	for i := range threads {
		thread := fmt.Sprintf("conflicts-%d-%s", i, localstack.Name(""))
		put, writes := checkpointBody("0001", "", 150, 10), writesBody("0001", "task", 5, 10)
		a, n := retrying(func() answer { return r.api.put(thread, put) })
		mustStatus(t, "put of 150 blobs", a, http.StatusOK)
		b, m := retrying(func() answer { return r.api.writes(thread, writes) })
		mustStatus(t, "put_writes", b, http.StatusNoContent)
		g, k := retrying(func() answer { return r.api.get(thread, "0001") })
		mustStatus(t, "get", g, http.StatusOK)
		if n+m+k > 0 {
			t.Logf("%s: %d calls answered 503 and retried by the caller", thread, n+m+k)
		}
		copyPath := "/v1/threads/" + url.PathEscape(thread) + "/copy"
		c, _ := retrying(func() answer {
			return r.api.do(http.MethodPost, copyPath, map[string]any{"target_thread_id": thread + "-copy"})
		})
		mustStatus(t, "copy", c, http.StatusNoContent)
		d, _ := retrying(func() answer { return r.api.do(http.MethodDelete, "/v1/threads/"+url.PathEscape(thread), nil) })
		mustStatus(t, "delete", d, http.StatusNoContent)

		copied := r.clean.get(thread+"-copy", "0001")
		mustStatus(t, "clean get of the copy", copied, http.StatusOK)
		vals, _ := copied.Body["values"].([]any)
		ws, _ := copied.Body["writes"].([]any)
		for _, field := range []string{"values", "writes"} {
			if !reflect.DeepEqual(copied.Body[field], g.Body[field]) {
				t.Fatalf("the copy's %s differ from what was read through the faults", field)
			}
		}
		if len(vals) != 150 || len(ws) != 5 {
			t.Fatalf("the copy has %d values and %d writes, want 150 and 5", len(vals), len(ws))
		}
		if gone := r.clean.get(thread, "0001"); gone.Status != http.StatusNotFound {
			t.Fatalf("deleted thread: get answered %d", gone.Status)
		}
	}
	st := r.ft.Stats()
	if st.Injected["dynamodb:conflict"] == 0 || st.Injected["dynamodb:unprocessed"] == 0 {
		t.Fatalf("faults not injected: %v", st.Injected)
	}
	t.Logf("FAULTS: %d DynamoDB requests, injected %v; every call succeeded, 0 lost", st.Requests["dynamodb"], st.Injected)
}
