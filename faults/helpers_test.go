package faults_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/api"
	"github.com/saver-dev/saver/dynamo"
	"github.com/saver-dev/saver/faults"
)

// fastRetries keeps the store's retryer (its attempts and what it retries)
// but caps each backoff at a millisecond, so tests that exhaust the retries
// do not wait the production backoff.
func fastRetries(o *dynamodb.Options) {
	o.Retryer = retry.AddWithMaxBackoffDelay(dynamo.NewRetryer(), time.Millisecond)
}

// faultyClient returns a DynamoDB client whose requests go through ft.
func faultyClient(cfg aws.Config, ft *faults.Transport, counter *dynamo.Counter, opts ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamo.NewClient(cfg, counter, append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		o.HTTPClient = ft.Client()
	}}, opts...)...)
}

// service serves store over HTTP as cmd/saver does.
func service(t *testing.T, store saver.Store) *client {
	t.Helper()
	s := api.NewServer(store, nil)
	s.RequestTimeout = 30 * time.Second
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return &client{t: t, url: srv.URL}
}

// client speaks the HTTP API in JSON, without retries: every status is seen.
type client struct {
	t   *testing.T
	url string
}

type answer struct {
	Status     int
	RetryAfter string
	Code       string
	Body       map[string]any
	Elapsed    time.Duration
}

func (c *client) do(method, path string, body any) answer {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.url+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	a := answer{Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After"), Elapsed: time.Since(start)}
	raw, _ := io.ReadAll(resp.Body)
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &a.Body); err != nil {
			c.t.Fatalf("%s %s: %d with a body that is not JSON: %q", method, path, resp.StatusCode, raw)
		}
		if e, ok := a.Body["error"].(map[string]any); ok {
			a.Code, _ = e["code"].(string)
		}
	}
	return a
}

// checkpointBody is a put of checkpoint id in thread with n blobs of size
// bytes each; the parent is parent ("" for none).
func checkpointBody(id, parent string, n, size int) map[string]any {
	versions := map[string]string{}
	var blobs []map[string]any
	for i := range n {
		ch := fmt.Sprintf("ch%03d", i)
		versions[ch] = id
		blobs = append(blobs, map[string]any{"channel": ch, "version": id, "value": typed(ch+"@"+id, size)})
	}
	return map[string]any{
		"checkpoint_ns":        "",
		"checkpoint_id":        id,
		"parent_checkpoint_id": parent,
		"checkpoint":           typed("skeleton "+id, 0),
		"metadata":             map[string]any{"step": 1, "source": "loop"},
		"channel_versions":     versions,
		"blobs":                blobs,
	}
}

// writesBody is a put of n writes of one task against checkpoint id.
func writesBody(id, task string, n, size int) map[string]any {
	var ws []map[string]any
	for i := range n {
		ws = append(ws, map[string]any{
			"task_id": task, "task_path": "~", "idx": i, "channel": fmt.Sprintf("w%03d", i),
			"value": typed(fmt.Sprintf("%s/%d", task, i), size),
		})
	}
	return map[string]any{"checkpoint_ns": "", "checkpoint_id": id, "writes": ws}
}

// typed is a msgpack-typed value whose bytes start with label, padded to
// size bytes.
func typed(label string, size int) map[string]any {
	data := []byte(label)
	if len(data) < size {
		data = append(data, bytes.Repeat([]byte{'.'}, size-len(data))...)
	}
	return map[string]any{"type": "bytes", "data": data}
}

func (c *client) put(thread string, body map[string]any) answer {
	c.t.Helper()
	return c.do(http.MethodPost, "/v1/threads/"+url.PathEscape(thread)+"/checkpoints", body)
}

func (c *client) writes(thread string, body map[string]any) answer {
	c.t.Helper()
	return c.do(http.MethodPost, "/v1/threads/"+url.PathEscape(thread)+"/writes", body)
}

func (c *client) get(thread, id string) answer {
	c.t.Helper()
	q := url.Values{"checkpoint_ns": {""}}
	if id != "" {
		q.Set("checkpoint_id", id)
	}
	return c.do(http.MethodGet, "/v1/threads/"+url.PathEscape(thread)+"/checkpoint?"+q.Encode(), nil)
}

func (c *client) list(thread string) answer {
	c.t.Helper()
	return c.do(http.MethodPost, "/v1/checkpoints/search", map[string]any{"thread_id": thread})
}

// mustUnavailable checks a is the API's answer when the backend is out:
// 503, code unavailable, a Retry-After.
func mustUnavailable(t *testing.T, what string, a answer) {
	t.Helper()
	if a.Status != http.StatusServiceUnavailable || a.Code != saver.EUNAVAILABLE || a.RetryAfter == "" {
		t.Fatalf("%s: got %d code %q Retry-After %q; want 503 unavailable with Retry-After (body %v)",
			what, a.Status, a.Code, a.RetryAfter, a.Body)
	}
}

func mustStatus(t *testing.T, what string, a answer, want int) {
	t.Helper()
	if a.Status != want {
		t.Fatalf("%s: status %d, want %d (body %v)", what, a.Status, want, a.Body)
	}
}

// tupleSummary reduces a tuple to what a put and its writes determine: the
// channel of every value with the label its bytes start with, and every
// write's task, idx and label.
func tupleSummary(t *testing.T, tup map[string]any) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%v parent=%v", tup["checkpoint_id"], tup["parent_checkpoint_id"])
	label := func(v any) string {
		m, _ := v.(map[string]any)
		s, _ := m["data"].(string) // base64 in JSON
		raw, err := decodeB64(s)
		if err != nil {
			t.Fatalf("value data %q: %v", s, err)
		}
		return strings.TrimRight(string(raw), ".") + fmt.Sprintf("[%d]", len(raw))
	}
	vals, _ := tup["values"].([]any)
	fmt.Fprintf(&b, " values=%d:", len(vals))
	for _, v := range vals {
		m := v.(map[string]any)
		fmt.Fprintf(&b, " %v=%s", m["channel"], label(m["value"]))
	}
	ws, _ := tup["writes"].([]any)
	fmt.Fprintf(&b, " writes=%d:", len(ws))
	for _, w := range ws {
		m := w.(map[string]any)
		fmt.Fprintf(&b, " %v/%v=%s", m["task_id"], m["idx"], label(m["value"]))
	}
	return b.String()
}

func decodeB64(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }
