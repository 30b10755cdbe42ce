package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/api"
	"github.com/saver-dev/saver/api/apitest"
	"github.com/saver-dev/saver/embedded"
	"github.com/saver-dev/saver/storetest"
)

// TestDeltaHistoryPages: a chain holding 191 MiB of writes was answered in
// one response, which took the process's memory (eight at once killed it).
// A history over HistoryPageBytes is answered in pages to a paged request,
// each about a page, which put together are the whole; an unpaged request
// for it gets 413, since an older client would take one page for the whole.
func TestDeltaHistoryPages(t *testing.T) {
	st, err := embedded.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatalf("embedded.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	ref := saver.CheckpointRef{Tenant: "default", ThreadID: "t"}
	value := strings.Repeat("v", 100<<10)
	parent := ""
	for i := 1; i <= 40; i++ {
		id := fmt.Sprintf("%04d", i)
		seed := ""
		if i == 1 {
			seed = "S"
		}
		storetest.PutDelta(t, st, ref, id, parent, []string{"messages=" + fmt.Sprint(i) + ":" + seed}, "messages")
		storetest.MustPutWrites(t, st, storetest.At(ref, id), storetest.DeltaWrite("task", "messages", fmt.Sprint(i, value)))
		parent = id
	}
	s := MustServer(t, st)
	s.HistoryPageBytes = 1 << 20
	post := func(id string, paged bool) deltaAnswer {
		body, _ := json.Marshal(map[string]any{"checkpoint_id": id, "channels": []string{"messages"}, "paged": paged})
		rec := do(t, s, "POST", "/v1/threads/t/delta-history", "application/json", body)
		var a deltaAnswer
		a.code, a.size = rec.Code, rec.Body.Len()
		if rec.Code == 200 {
			if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
				t.Fatalf("answer: %v", err)
			}
		} else {
			a.error = errorCode(t, rec)
		}
		return a
	}

	if a := post("0040", false); a.code != 413 || a.error != saver.ETOOLARGE {
		t.Fatalf("an unpaged request for a history over the page: %d %s, want 413 too_large", a.code, a.error)
	}
	var writes []saver.Write
	var seed *saver.Typed
	pages := 0
	for id := "0040"; id != ""; pages++ {
		a := post(id, true)
		if a.code != 200 {
			t.Fatalf("page at %s: %d %s", id, a.code, a.error)
		}
		// A page stops after the ancestor that reaches it: one write more.
		if max := 2 * (int(s.HistoryPageBytes) + len(value)); a.size > max {
			t.Fatalf("page at %s is %d bytes, over %d", id, a.size, max)
		}
		h := a.Channels["messages"]
		writes, seed, id = append(h.Writes, writes...), h.Seed, h.Next
	}
	if pages < 4 {
		t.Fatalf("%d pages for 39 writes of 100 KiB in pages of 1 MiB", pages)
	}
	whole, _ := st.DeltaHistory(t.Context(), saver.DeltaRequest{CheckpointRef: storetest.At(ref, "0040"), Channels: []string{"messages"}})
	// reflect, not cmp: cmp compares 4 MB of bytes one at a time.
	if !reflect.DeepEqual(whole["messages"].Writes, writes) || seed == nil || string(seed.Data) != "S" {
		t.Fatalf("pages differ from the whole history: %d writes, want %d; seed %v", len(writes), len(whole["messages"].Writes), seed)
	}

	// A history within a page is one answer, without next.
	if a := post("0005", false); a.code != 200 || a.Channels["messages"].Next != "" || len(a.Channels["messages"].Writes) != 4 {
		t.Fatalf("a short history: %d, next %q, %d writes", a.code, a.Channels["messages"].Next, len(a.Channels["messages"].Writes))
	}
}

type deltaAnswer struct {
	code, size int
	error      string
	Channels   map[string]struct {
		Writes []saver.Write `json:"writes"`
		Seed   *saver.Typed  `json:"seed"`
		Next   string        `json:"next"`
	} `json:"channels"`
}

// TestResponseBudget: a 19 MiB get_tuple was answered at once, as many as
// asked, each holding its tuple and its encoding. The bytes of answers are
// held against MaxResponsesBytes as the store reads them: a request past
// it waits, then gets 503 with Retry-After, and is answered once the
// holder is done; a tuple larger than the whole budget gets 413.
func TestResponseBudget(t *testing.T) {
	const size = 1 << 20
	holding, release := make(chan struct{}), make(chan struct{})
	var first sync.Once
	m := &apitest.Store{GetTupleFn: func(ctx context.Context, ref saver.CheckpointRef) (*saver.Tuple, error) {
		// As a store does: its reads are charged before they are decoded.
		n := size
		if ref.ID == "huge" {
			n = 8 * size
		}
		if err := saver.Take(ctx, int64(n)); err != nil {
			return nil, err
		}
		if ref.ID == "holder" {
			first.Do(func() { close(holding) })
			<-release
		}
		tup := &saver.Tuple{Checkpoint: saver.Checkpoint{CheckpointRef: ref, Body: saver.Typed{Type: "bytes", Data: make([]byte, n)}}}
		return tup, nil
	}}
	s := MustMockServer(t, m)
	s.Capabilities.Expirer = nil
	s.MaxResponsesBytes = 3 * size // the holder's read and encoding, and a little
	s.MaxBodiesWait = 50 * time.Millisecond
	get := func(id string) (int, string, string) {
		rec := do(t, s, "GET", "/v1/threads/t/checkpoint?checkpoint_id="+id, "", nil)
		if rec.Code == 200 {
			return 200, "", ""
		}
		return rec.Code, errorCode(t, rec), rec.Header().Get("Retry-After")
	}

	if code, e, _ := get("huge"); code != 413 || e != saver.ETOOLARGE {
		t.Fatalf("a tuple over the whole budget: %d %s, want 413 too_large", code, e)
	}
	done := make(chan int)
	go func() { code, _, _ := get("holder"); done <- code }()
	<-holding
	if code, e, retry := get("other"); code != 503 || e != saver.EUNAVAILABLE || retry == "" {
		t.Fatalf("a tuple past the budget: %d %s (Retry-After %q), want 503 unavailable with Retry-After", code, e, retry)
	}
	close(release)
	if code := <-done; code != 200 {
		t.Fatalf("the holder: %d, want 200", code)
	}
	if code, e, _ := get("other"); code != 200 {
		t.Fatalf("once the holder is answered: %d %s, want 200", code, e)
	}
	// Every byte was given back: the whole budget less one is free.
	for range 2 {
		if code, e, _ := get("other"); code != 200 {
			t.Fatalf("again: %d %s, want 200", code, e)
		}
	}
}

// TestResponseBudgetMsgpackEncoding: the encoding of an answer counts too,
// whatever the codec: a mock store that charges nothing still cannot answer
// more than the budget holds.
func TestResponseBudgetMsgpackEncoding(t *testing.T) {
	m := &apitest.Store{GetTupleFn: func(ctx context.Context, ref saver.CheckpointRef) (*saver.Tuple, error) {
		return &saver.Tuple{Checkpoint: saver.Checkpoint{CheckpointRef: ref, Body: saver.Typed{Type: "bytes", Data: make([]byte, 2<<20)}}}, nil
	}}
	s := MustServer(t, m)
	s.MaxResponsesBytes = 1 << 20
	for _, accept := range []string{"application/json", "application/msgpack"} {
		rec := doAccept(t, s, "/v1/threads/t/checkpoint", accept)
		if rec.Code != 413 || errorCode(t, rec) != saver.ETOOLARGE {
			t.Fatalf("%s: an answer over the budget: %d, want 413", accept, rec.Code)
		}
	}
	s = MustServer(t, m)
	rec := doAccept(t, s, "/v1/threads/t/checkpoint", "application/msgpack")
	var tup struct {
		Checkpoint saver.Typed `msgpack:"checkpoint"`
	}
	if rec.Code != 200 || msgpack.Unmarshal(rec.Body.Bytes(), &tup) != nil || len(tup.Checkpoint.Data) != 2<<20 {
		t.Fatalf("within the default budget: %d", rec.Code)
	}
}

// doAccept sends a GET through the whole echo stack, asking for accept.
func doAccept(tb testing.TB, s *api.Server, path, accept string) *httptest.ResponseRecorder {
	tb.Helper()
	req := httptest.NewRequest("GET", path, bytes.NewReader(nil))
	req.Header.Set("Accept", accept)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return rec
}

// TestResponseBudget_Shares: one client's large reads held the whole
// response budget, so every other client's reads waited and got 503. Each
// client now holds at most its share (a quarter, at least two history
// pages): its own requests past it wait and fail, another's are answered.
func TestResponseBudget_Shares(t *testing.T) {
	const size = 1 << 20
	for _, tt := range clients {
		t.Run(tt.name, func(t *testing.T) {
			holding, release := make(chan struct{}, 5), make(chan struct{})
			m := &apitest.Store{GetTupleFn: func(ctx context.Context, ref saver.CheckpointRef) (*saver.Tuple, error) {
				n := size
				if ref.ID == "holder" {
					n = 3 * size / 2
				}
				if err := saver.Take(ctx, int64(n)); err != nil {
					return nil, err
				}
				if ref.ID == "holder" {
					holding <- struct{}{}
					<-release
				}
				return &saver.Tuple{Checkpoint: saver.Checkpoint{CheckpointRef: ref}}, nil
			}}
			s := MustMockServer(t, m)
			withKeys(t, s, tt.keys)
			s.MaxResponsesBytes, s.HistoryPageBytes = 8*size, size // a share of 2 MiB
			s.MaxBodiesWait = 50 * time.Millisecond
			h := s.Handler()
			get := func(id string, who func(*http.Request)) int {
				req := httptest.NewRequest("GET", "/v1/threads/t/checkpoint?checkpoint_id="+id, nil)
				return serve(h, req, who).Code
			}
			// Client a asks for five reads of 1.5 MiB, nearly all of the
			// budget.
			answered := make(chan int, 5)
			for range 5 {
				go func() { answered <- get("holder", tt.a) }()
			}
			held := 0
			for range 5 {
				select {
				case <-holding:
					held++
				case code := <-answered:
					if code != 503 {
						t.Fatalf("client a's read past its share: %d, want 503", code)
					}
				}
			}
			if held != 1 {
				t.Errorf("client a holds %d reads of 1.5 MiB, want 1 (its share is 2 MiB)", held)
			}
			if code := get("other", tt.b); code != 200 {
				t.Fatalf("client b's read while client a holds its share: %d, want 200", code)
			}
			close(release)
			for range held {
				if code := <-answered; code != 200 {
					t.Fatalf("client a's held read: %d, want 200", code)
				}
			}
		})
	}
}

// TestSearchPageShortensToTheBudget: a page of large checkpoints more than
// the caller's share of the response budget was a 413 for the whole list.
// It is now answered shorter, with a cursor, so a client following cursors
// reads every checkpoint.
func TestSearchPageShortensToTheBudget(t *testing.T) {
	const size = 1 << 20
	var ids []string
	for i := 9; i >= 0; i-- {
		ids = append(ids, fmt.Sprintf("c%d", i)) // newest first
	}
	m := &apitest.Store{ListCheckpointsFn: func(ctx context.Context, f saver.ListFilter) ([]*saver.Tuple, error) {
		var out []*saver.Tuple
		for _, id := range ids {
			if f.After != nil && id >= f.After.ID {
				continue
			}
			if len(out) == f.Limit {
				break
			}
			if err := saver.Take(ctx, size); err != nil {
				return nil, err
			}
			ref := saver.CheckpointRef{ThreadID: "t", ID: id}
			out = append(out, &saver.Tuple{Checkpoint: saver.Checkpoint{CheckpointRef: ref, Body: saver.Typed{Type: "bytes", Data: make([]byte, size)}}})
		}
		return out, nil
	}}
	s := MustMockServer(t, m)
	s.MaxResponsesBytes, s.HistoryPageBytes = 16*size, size // a share of 4 MiB
	var got []string
	var cursor any
	for range 20 {
		body, _ := json.Marshal(map[string]any{"thread_id": "t", "cursor": cursor})
		rec := do(t, s, "POST", "/v1/checkpoints/search", "application/json", body)
		if rec.Code != 200 {
			t.Fatalf("search: %d %s", rec.Code, rec.Body)
		}
		var page struct {
			Tuples []struct {
				CheckpointID string `json:"checkpoint_id"`
			} `json:"tuples"`
			NextCursor *string `json:"next_cursor"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
			t.Fatal(err)
		}
		for _, tp := range page.Tuples {
			got = append(got, tp.CheckpointID)
		}
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	if !reflect.DeepEqual(got, ids) {
		t.Fatalf("read %v, want %v", got, ids)
	}
}

// TestSearchPageShortensOnlyForTheBudget: a page is asked for again,
// shorter, only when the answer was over the caller's share; another 413
// (a checkpoint whose metadata was stored past the limits) is the answer at
// once, not after a read of the page for every halving.
func TestSearchPageShortensOnlyForTheBudget(t *testing.T) {
	var calls atomic.Int64
	m := &apitest.Store{ListCheckpointsFn: func(context.Context, saver.ListFilter) ([]*saver.Tuple, error) {
		calls.Add(1)
		return nil, saver.Errorf(saver.ETOOLARGE, "Checkpoint c1's metadata is over the limits.")
	}}
	s := MustMockServer(t, m)
	rec := do(t, s, "POST", "/v1/checkpoints/search", "application/json", []byte(`{"thread_id":"t"}`))
	if rec.Code != 413 || calls.Load() != 1 {
		t.Fatalf("%d after %d reads, want 413 after 1", rec.Code, calls.Load())
	}
}
