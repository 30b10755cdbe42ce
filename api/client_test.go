package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/api"
	"github.com/saver-dev/saver/api/apitest"
)

// clients are the two clients of the tests below, each way a client is
// named: by its key's tenant (both from one address), or by its address
// when the server has no keys.
var clients = []struct {
	name string
	keys map[string]string
	a, b func(*http.Request)
}{
	{"Tenants", map[string]string{"aaaaaaaaaaaaaaaa": "a", "bbbbbbbbbbbbbbbb": "b"},
		func(r *http.Request) { r.Header.Set("X-API-Key", "aaaaaaaaaaaaaaaa") },
		func(r *http.Request) { r.Header.Set("X-API-Key", "bbbbbbbbbbbbbbbb") }},
	{"AddressesWithoutKeys", nil,
		func(r *http.Request) { r.RemoteAddr = "127.0.0.1:40000" },
		func(r *http.Request) { r.RemoteAddr = "127.0.0.2:40000" }},
}

func withKeys(t *testing.T, s *api.Server, keys map[string]string) {
	t.Helper()
	if keys == nil {
		return
	}
	k, err := api.NewKeys(keys)
	if err != nil {
		t.Fatal(err)
	}
	s.Keys = k
}

// serve sends req through h, a server's whole stack, as the client of as.
// Tests take h from Handler before they send from many goroutines: Handler
// builds the stack on its first call.
func serve(h http.Handler, req *http.Request, as func(*http.Request)) *httptest.ResponseRecorder {
	as(req)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// stalledBody is a declared body whose sender stops before its first byte:
// it reports when the server starts reading it, then sends nothing until
// the test ends.
type stalledBody struct {
	reading chan<- struct{}
	end     <-chan struct{}
	once    sync.Once
}

func (b *stalledBody) Read([]byte) (int, error) {
	b.once.Do(func() { b.reading <- struct{}{} })
	<-b.end
	return 0, io.ErrUnexpectedEOF
}

// TestBodiesBudget_Shares: the bodies budget was shared by all clients: one
// tenant holding sixteen declared 32 MiB uploads (all 512 MiB) made every
// other tenant's puts wait 5 s and get 503 for as long as it held them. Each
// client now holds at most its share (MaxClientBodiesBytes): past it, its
// own requests wait and fail, and another client's put is answered at once.
func TestBodiesBudget_Shares(t *testing.T) {
	const wait = 500 * time.Millisecond
	for _, tt := range clients {
		t.Run(tt.name, func(t *testing.T) {
			s := MustMockServer(t, &apitest.Store{PutWritesFn: func(context.Context, saver.PutWrites) error { return nil }})
			withKeys(t, s, tt.keys)
			s.MaxBodyBytes, s.MaxBodiesBytes, s.MaxClientBodiesBytes, s.MaxBodiesWait = 64<<10, 256<<10, 64<<10, wait
			h := s.Handler()

			// Client a declares four bodies of 60 KiB, nearly all of the
			// budget, and sends none of them.
			end := make(chan struct{})
			reading, answered := make(chan struct{}), make(chan int)
			var wg sync.WaitGroup
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					req := httptest.NewRequest("POST", "/v1/threads/t/writes", &stalledBody{reading: reading, end: end})
					req.ContentLength = 60 << 10
					req.Header.Set("Content-Type", "application/json")
					answered <- serve(h, req, tt.a).Code
				}()
			}
			defer wg.Wait()
			defer close(end)
			held := 0
			for range 4 { // each is either read (its bytes held) or refused
				select {
				case <-reading:
					held++
				case code := <-answered:
					if code != 503 {
						t.Fatalf("a body of client a past its share: %d, want 503", code)
					}
				}
			}
			go func() { // the held ones, answered once the test ends
				for range held {
					<-answered
				}
			}()
			if held != 1 {
				t.Errorf("client a holds %d bodies of 60 KiB, want 1 (its share is 64 KiB)", held)
			}

			body, _ := json.Marshal(map[string]any{"checkpoint_id": "c1", "writes": []any{
				map[string]any{"task_id": "t", "idx": 0, "channel": "ch", "value": map[string]any{"type": "bytes", "data": strings.Repeat("b", 4<<10)}},
			}})
			req := httptest.NewRequest("POST", "/v1/threads/t/writes", strings.NewReader(string(body)))
			req.Header.Set("Content-Type", "application/json")
			start := time.Now()
			rec := serve(h, req, tt.b)
			took := time.Since(start)
			if rec.Code != 204 {
				t.Fatalf("client b's put while client a holds its share: %d %s after %s, want 204", rec.Code, rec.Body, took)
			}
			if took >= wait {
				t.Fatalf("client b's put took %s: it waited for client a's bodies", took)
			}
			t.Logf("client b's put: %s", took)
		})
	}
}

// TestClientRequests: a tenant spread over many addresses, each under the
// connection cap per address, could keep every connection busy. Past
// MaxClientRequests in flight, its next request gets 503 with Retry-After
// at once, whatever address it comes from; another client's is served.
func TestClientRequests(t *testing.T) {
	for _, tt := range clients {
		t.Run(tt.name, func(t *testing.T) {
			entered, end := make(chan struct{}), make(chan struct{})
			s := MustMockServer(t, &apitest.Store{GetTupleFn: func(_ context.Context, ref saver.CheckpointRef) (*saver.Tuple, error) {
				if ref.ThreadID == "slow" {
					entered <- struct{}{}
					<-end
				}
				return nil, saver.Errorf(saver.ENOTFOUND, "No checkpoint.")
			}})
			withKeys(t, s, tt.keys)
			s.MaxClientRequests = 2
			h := s.Handler()

			// With keys, client a sends each request from an address of
			// its own: the cap is the tenant's, wherever it connects from.
			from := func(i int) *http.Request {
				req := httptest.NewRequest("GET", "/v1/threads/slow/checkpoint", nil)
				if tt.keys != nil {
					req.RemoteAddr = fmt.Sprintf("198.51.100.%d:40000", i+1)
				}
				return req
			}
			var wg sync.WaitGroup
			defer wg.Wait()
			defer close(end)
			for i := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					serve(h, from(i), tt.a)
				}()
				<-entered
			}

			third := make(chan *httptest.ResponseRecorder, 1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				third <- serve(h, from(2), tt.a)
			}()
			select {
			case rec := <-third:
				if rec.Code != 503 || errorCode(t, rec) != saver.EUNAVAILABLE || rec.Header().Get("Retry-After") == "" {
					t.Fatalf("client a's third request: %d %s, want 503 unavailable with Retry-After", rec.Code, rec.Body)
				}
			case <-entered:
				go func() { <-third }()
				t.Fatal("client a's third request in flight reached the store, over a cap of 2")
			case <-time.After(10 * time.Second):
				t.Fatal("client a's third request was not answered")
			}

			if rec := serve(h, httptest.NewRequest("GET", "/v1/threads/other/checkpoint", nil), tt.b); rec.Code != 404 {
				t.Fatalf("client b's request while client a is at its cap: %d %s, want 404", rec.Code, rec.Body)
			}
		})
	}
}
