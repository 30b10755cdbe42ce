package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/api/apitest"
	"github.com/saver-dev/saver/storetest"
)

// TestCheckpointIDKeyLength: a namespace of 100 "!" and a checkpoint id of
// 256 "!" were each within their limits but together built a DynamoDB sort
// key of 1,072 bytes, which the store answered with 413 "item too large".
// Every route that takes a checkpoint id refuses such an id up front with a
// 400 naming the field, before any store call.
func TestCheckpointIDKeyLength(t *testing.T) {
	id := strings.Repeat("!", saver.MaxIDBytes)
	ns := strings.Repeat("!", 100)
	js := func(v map[string]any) []byte { b, _ := json.Marshal(v); return b }
	put := putBody()
	put["checkpoint_ns"], put["checkpoint_id"] = ns, id
	tests := []struct {
		name, method, path string
		body               []byte
		field              string
	}{
		{"Put", "POST", "/v1/threads/t/checkpoints", js(put), "checkpoint_id"},
		{"PutParent", "POST", "/v1/threads/t/checkpoints", js(func() map[string]any {
			b := putBody()
			b["parent_checkpoint_id"] = id
			return b
		}()), "parent_checkpoint_id"},
		{"Writes", "POST", "/v1/threads/t/writes", js(map[string]any{"checkpoint_ns": ns, "checkpoint_id": id, "writes": []any{}}), "checkpoint_id"},
		{"Get", "GET", "/v1/threads/t/checkpoint?checkpoint_ns=" + url.QueryEscape(ns) + "&checkpoint_id=" + url.QueryEscape(id), nil, "checkpoint_id"},
		{"SearchID", "POST", "/v1/checkpoints/search", js(map[string]any{"checkpoint_id": id}), "checkpoint_id"},
		{"SearchBefore", "POST", "/v1/checkpoints/search", js(map[string]any{"before": id}), "before"},
		{"TreePath", "GET", "/v1/threads/t/tree/path?checkpoint_id=" + url.QueryEscape(id), nil, "checkpoint_id"},
		{"TreeChildren", "GET", "/v1/threads/t/tree/children?checkpoint_ns=" + url.QueryEscape(ns) + "&checkpoint_id=" + url.QueryEscape(id), nil, "checkpoint_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Only the tree's read of links is allowed; nothing may be stored.
			s := MustMockServer(t, &apitest.Store{ListNodesFn: func(context.Context, string, string) ([]saver.Node, error) {
				return []saver.Node{{ThreadID: "t", ID: "c1"}}, nil
			}})
			ctype := ""
			if tt.body != nil {
				ctype = "application/json"
			}
			rec := do(t, s, tt.method, tt.path, ctype, tt.body)
			if got, want := rec.Code, 400; got != want {
				t.Fatalf("Code=%d, want %d (body %s)", got, want, rec.Body)
			}
			if got, want := errorCode(t, rec), saver.EINVALID; got != want {
				t.Fatalf("code=%q, want %q", got, want)
			}
			if !strings.Contains(rec.Body.String(), tt.field+" takes") {
				t.Fatalf("the message does not name %s: %s", tt.field, rec.Body)
			}
		})
	}
}

// TestClaimDurationsOutOfRange: lease_ms=288230376151712504 (2^58 + 1000) was
// multiplied into a time.Duration, wrapped around and granted as a
// one-second lease. Durations out of range are refused before the ledger
// sees them, whatever the codec.
func TestClaimDurationsOutOfRange(t *testing.T) {
	tests := []struct {
		name, ctype string
		body        []byte
	}{
		{"LeaseWrapsToOneSecond", "application/json", []byte(`{"key":"k","lease_ms":288230376151712504}`)},
		{"LeaseMaxInt64", "application/json", []byte(`{"key":"k","lease_ms":9223372036854775807}`)},
		{"LeaseOverAnHour", "application/json", []byte(`{"key":"k","lease_ms":3600001}`)},
		{"LeaseZero", "application/json", []byte(`{"key":"k","lease_ms":0}`)},
		{"LeaseNegative", "application/json", []byte(`{"key":"k","lease_ms":-1000}`)},
		{"TTLWrapsToOneDay", "application/json", []byte(`{"key":"k","ttl_ms":288230376238111744}`)},
		{"TTLNegative", "application/json", []byte(`{"key":"k","ttl_ms":-1}`)},
		{"LeaseUint64Msgpack", "application/msgpack", mpMap("key", "k", "lease_ms", raw{0xcf, 0x04, 0, 0, 0, 0, 0, 0x03, 0xe8})},
		{"LeaseHugeUint64Msgpack", "application/msgpack", mpMap("key", "k", "lease_ms", raw{0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := MustMockServer(t, &apitest.Store{ClaimFn: func(_ context.Context, in saver.ClaimRequest) (*saver.Claim, error) {
				t.Errorf("claim reached the ledger with lease %s, ttl %s", in.Lease, in.TTL)
				return &saver.Claim{Key: in.Key, State: saver.ClaimClaimed, Token: "t", Attempt: 1}, nil
			}})
			rec := do(t, s, "POST", "/v1/idempotency/claim", tt.ctype, tt.body)
			if got, want := rec.Code, 400; got != want {
				t.Fatalf("Code=%d, want %d (body %s)", got, want, rec.Body)
			}
			if got, want := errorCode(t, rec), saver.EINVALID; got != want {
				t.Fatalf("code=%q, want %q", got, want)
			}
		})
	}
}

// TestBodiesBudget: bodies held at once are bounded (MaxBodiesBytes), so
// that many connections sending large bodies together cannot take the
// process's memory (1,024 connections × 32 MB each was unbounded). A request
// whose body would pass the budget waits for others to give theirs back,
// then gets 503 with Retry-After and stores nothing; once the holder is
// answered, the same request goes through.
func TestBodiesBudget(t *testing.T) {
	writes := func(size int) []byte {
		b, _ := json.Marshal(map[string]any{"checkpoint_id": "c1", "writes": []any{
			map[string]any{"task_id": "t", "idx": 0, "channel": "ch", "value": map[string]any{"type": "bytes", "data": strings.Repeat("a", size)}},
		}})
		return b
	}
	holding, release := make(chan struct{}), make(chan struct{})
	var stored atomic.Int32
	store := &apitest.Store{PutWritesFn: func(_ context.Context, in saver.PutWrites) error {
		if len(in.Writes[0].Value.Data) > 30<<10 { // the 50 KiB body's
			close(holding) // the large body is in, and held until release
			<-release
		}
		stored.Add(1)
		return nil
	}}
	s := MustMockServer(t, store)
	// The large request holds its 50 KiB body, what it takes once decoded
	// (its 50 KiB string and a little) and the JSON decoder's copy of the
	// body (up to twice it): about 210 KiB, leaving less than the small
	// body's 20 KiB.
	s.MaxBodyBytes, s.MaxBodiesBytes, s.MaxBodiesWait = 64<<10, 224<<10, 100*time.Millisecond

	held := make(chan int)
	go func() {
		rec := do(t, s, "POST", "/v1/threads/t/writes", "application/json", writes(50<<10))
		if rec.Code != 204 {
			t.Errorf("the large request: %d %s", rec.Code, rec.Body)
		}
		held <- rec.Code
	}()
	select {
	case <-holding:
	case <-held:
		t.Fatal("the large request was answered before it reached the store")
	}

	// Its length is declared: it is refused before a byte of it is read,
	// so that requests holding part of their bodies never wait on each
	// other until all of them fail.
	small := &countingReader{r: bytes.NewReader(writes(20 << 10))}
	req := httptest.NewRequest("POST", "/v1/threads/t/writes", small)
	req.ContentLength = int64(small.r.Len())
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if small.n != 0 {
		t.Errorf("%d bytes of the refused body were read, want 0", small.n)
	}
	if rec.Code != 503 || errorCode(t, rec) != saver.EUNAVAILABLE || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("a body past the budget: %d %s (Retry-After %q), want 503 unavailable with Retry-After", rec.Code, rec.Body, rec.Header().Get("Retry-After"))
	}
	if n := stored.Load(); n != 0 {
		t.Fatalf("%d calls stored while the large one was held, want 0", n)
	}
	close(release)
	<-held
	if rec := do(t, s, "POST", "/v1/threads/t/writes", "application/json", writes(20<<10)); rec.Code != 204 {
		t.Fatalf("after the holder was answered: %d %s, want 204", rec.Code, rec.Body)
	}
	if n := stored.Load(); n != 2 {
		t.Fatalf("%d calls stored, want 2", n)
	}
}

type countingReader struct {
	r *bytes.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestBodiesBudgetCountsDecoded: the bytes all requests hold at once
// (MaxBodiesBytes) counted bodies as they came over the wire, so bodies
// that decode to many times their size all went through at once (eight
// 4 MB bodies of empty maps ended in out-of-memory). What a body takes
// once decoded is taken from the same budget before it is decoded: here
// two such puts fit, the others wait and get 503 with Retry-After, nothing
// stored.
func TestBodiesBudgetCountsDecoded(t *testing.T) {
	const requests, fit = 6, 2
	// 100,000 channel versions: 1.3 MB that take about 16 MB once decoded
	// (a Go map's tables and two strings an entry, and the JSON decoder's
	// copy of the body).
	var b strings.Builder
	b.WriteString(`{"checkpoint_id":"c","checkpoint":{"type":"msgpack","data":""},"channel_versions":{"c0":"1"`)
	for i := 1; i < 100_000; i++ {
		fmt.Fprintf(&b, `,"c%d":"1"`, i)
	}
	body := []byte(b.String() + "}}")
	entered, release := make(chan struct{}, requests), make(chan struct{})
	s := MustMockServer(t, &apitest.Store{PutCheckpointFn: func(context.Context, saver.PutCheckpoint) error {
		entered <- struct{}{}
		<-release
		return nil
	}})
	s.MaxBodyBytes, s.MaxBodiesBytes, s.MaxBodiesWait = 2<<20, 40<<20, 100*time.Millisecond

	s.Handler() // built once, before the requests share it
	answered := make(chan *httptest.ResponseRecorder, requests)
	for i := 0; i < requests; i++ {
		go func() { answered <- do(t, s, "POST", "/v1/threads/t/checkpoints", "application/json", body) }()
	}
	var in int
	var refused []*httptest.ResponseRecorder
	timeout := time.After(60 * time.Second)
	for in+len(refused) < requests {
		select {
		case <-entered:
			in++
		case rec := <-answered:
			refused = append(refused, rec)
		case <-timeout:
			t.Fatalf("%d requests in the store and %d answered; want all %d accounted for", in, len(refused), requests)
		}
	}
	close(release)
	if in != fit {
		t.Errorf("%d puts held their decoded bodies at once, want %d (%d bytes of budget)", in, fit, s.MaxBodiesBytes)
	}
	for _, rec := range refused {
		if rec.Code != 503 || errorCode(t, rec) != saver.EUNAVAILABLE || rec.Header().Get("Retry-After") == "" {
			t.Errorf("a put past the budget: %d %.300s (Retry-After %q), want 503 unavailable with Retry-After", rec.Code, rec.Body, rec.Header().Get("Retry-After"))
		}
	}
	for i := 0; i < in; i++ {
		if rec := <-answered; rec.Code != 200 {
			t.Errorf("a held put: %d %.300s, want 200", rec.Code, rec.Body)
		}
	}
	// Every byte came back: the same put goes through alone.
	if rec := do(t, s, "POST", "/v1/threads/t/checkpoints", "application/json", body); rec.Code != 200 {
		t.Fatalf("after the others were answered: %d %.300s, want 200", rec.Code, rec.Body)
	}
}

// TestMetadataOverTheLimitNotStored: a put whose metadata a read could not
// afford to decode (ten thousand and one empty maps: a body of 10 KB within
// every body limit) was stored, and so were bodies of four million, which
// then took every search of the thread down. The put is 413 naming
// metadata, in both codecs, and nothing of it is stored or found.
func TestMetadataOverTheLimitNotStored(t *testing.T) {
	n := saver.MaxMetadataValues + 1
	emptyMaps := append([]byte{0xdd, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}, bytes.Repeat([]byte{0x80}, n)...)
	tests := []struct {
		name, ctype string
		body        []byte
	}{
		{"Msgpack", "application/msgpack", mpMap("checkpoint_id", "c1", "checkpoint", map[string]any{"type": "msgpack", "data": []byte{}}, "metadata", raw(mpMap("step", 1, "a", raw(emptyMaps))))},
		{"JSON", "application/json", []byte(`{"checkpoint_id":"c1","checkpoint":{"type":"msgpack","data":""},"metadata":{"step":1,"a":[{}` + strings.Repeat(",{}", n-1) + `]}}`)},
		{"JSONLongString", "application/json", []byte(`{"checkpoint_id":"c1","checkpoint":{"type":"msgpack","data":""},"metadata":{"a":"` + strings.Repeat("x", saver.MaxMetadataBytes) + `"}}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := MustEmbeddedServer(t, storetest.NewClock())
			rec := do(t, s, "POST", "/v1/threads/t/checkpoints", tt.ctype, tt.body)
			if got, want := rec.Code, 413; got != want {
				t.Fatalf("Code=%d, want %d (body %.300s)", got, want, rec.Body)
			}
			if got, want := errorCode(t, rec), saver.ETOOLARGE; got != want {
				t.Fatalf("code=%q, want %q", got, want)
			}
			if !strings.Contains(rec.Body.String(), "metadata") {
				t.Fatalf("the message does not name metadata: %s", rec.Body)
			}
			rec = do(t, s, "POST", "/v1/checkpoints/search", "application/json", []byte(`{"thread_id":"t"}`))
			if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"tuples":[]`) {
				t.Fatalf("search after the refused put: %d %.300s, want no tuples", rec.Code, rec.Body)
			}
		})
	}
}

// TestChunkedBodyDecodedOverTheShare: a chunked body (no declared length)
// whose bytes and decoded size together pass its client's share was
// measured as if it held no bytes: it passed the 413 check, waited the
// whole MaxBodiesWait on its own share and got 503, which a client retries
// for ever. It is a 413 at once, as the same body of declared length is.
func TestChunkedBodyDecodedOverTheShare(t *testing.T) {
	// 40 KiB of body that take about as much once decoded: each alone
	// within the share of 64 KiB, together past it.
	put := putBody()
	put["checkpoint"] = map[string]any{"type": "msgpack", "data": make([]byte, 40<<10)}
	body, err := msgpack.Marshal(put)
	if err != nil {
		t.Fatal(err)
	}
	for _, chunked := range []bool{false, true} {
		s := MustMockServer(t, &apitest.Store{PutCheckpointFn: func(context.Context, saver.PutCheckpoint) error { return nil }})
		s.MaxBodyBytes, s.MaxBodiesBytes, s.MaxClientBodiesBytes, s.MaxBodiesWait = 64<<10, 4<<20, 64<<10, 2*time.Second
		req := httptest.NewRequest("POST", "/v1/threads/t/checkpoints", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/msgpack")
		if chunked {
			req.ContentLength = -1
		}
		rec := httptest.NewRecorder()
		start := time.Now()
		s.Handler().ServeHTTP(rec, req)
		if took := time.Since(start); rec.Code != 413 || took >= s.MaxBodiesWait {
			t.Fatalf("chunked=%v: %d after %s, want 413 at once: %s", chunked, rec.Code, took, rec.Body)
		}
	}
}
