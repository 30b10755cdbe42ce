package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/api/apitest"
)

// acceptingStore accepts every call, so the fuzzer exercises decoding and
// validation rather than store errors.
func acceptingStore() *apitest.Store {
	return &apitest.Store{
		PutCheckpointFn: func(context.Context, saver.PutCheckpoint) error { return nil },
		PutWritesFn:     func(context.Context, saver.PutWrites) error { return nil },
		ListCheckpointsFn: func(context.Context, saver.ListFilter) ([]*saver.Tuple, error) {
			return nil, nil
		},
		DeleteForRunsFn: func(context.Context, string, []string) error { return nil },
		CopyThreadFn:    func(context.Context, string, string, string) error { return nil },
		PruneFn:         func(context.Context, string, []string, saver.PruneStrategy) error { return nil },
		ClaimFn: func(_ context.Context, in saver.ClaimRequest) (*saver.Claim, error) {
			return &saver.Claim{Key: in.Key, State: saver.ClaimClaimed, Token: "t", Attempt: 1}, nil
		},
		CompleteFn: func(context.Context, string, string, string, saver.Typed) error { return nil },
		FailFn:     func(context.Context, string, string, string, saver.ClaimError) error { return nil },
		DeltaHistoryFn: func(context.Context, saver.DeltaRequest) (map[string]*saver.DeltaHistory, error) {
			return nil, nil
		},
		BatchFn: func(_ context.Context, _ string, ops []saver.ItemOp) ([]saver.ItemResult, error) {
			return make([]saver.ItemResult, len(ops)), nil
		},
	}
}

var fuzzRoutes = []string{
	"/v1/threads/t/checkpoints",
	"/v1/threads/t/writes",
	"/v1/checkpoints/search",
	"/v1/threads/t/copy",
	"/v1/threads/prune",
	"/v1/runs/delete",
	"/v1/idempotency/claim",
	"/v1/idempotency/complete",
	"/v1/idempotency/fail",
	"/v1/threads/t/delta-history",
	"/v1/store/batch",
}

// FuzzRequestDecoding feeds arbitrary bodies to every POST route in both
// media types. Whatever the bytes, the answer is a success or a 4xx with an
// error body: never a 5xx, never a panic.
func FuzzRequestDecoding(f *testing.F) {
	for i := range fuzzRoutes {
		j, _ := json.Marshal(putBody())
		m, _ := msgpack.Marshal(putBody())
		f.Add(uint8(i), false, j)
		f.Add(uint8(i), true, m)
		f.Add(uint8(i), false, []byte(`{"checkpoint_id":"c","writes":[{"task_id":"t","idx":-1,"channel":"__error__","value":{"type":"msgpack","data":"AQ=="}}]}`))
		f.Add(uint8(i), false, []byte(`{"thread_id":"t","checkpoint_ns":null,"filter":{"step":1,"a":{"b":[1,2.5]}},"limit":3}`))
		f.Add(uint8(i), false, []byte(`{"thread_ids":["a","b"],"strategy":"delete","run_ids":["r"]}`))
		f.Add(uint8(i), true, []byte{0x81, 0xa1, 'x', 0xc1})
		f.Add(uint8(i), false, []byte(`[]`))
		f.Add(uint8(i), false, []byte(`{"key":"k","token":"t","lease_ms":1000,"result":{"type":"msgpack","data":""},"error":{"message":"m","retryable":true}}`))
		// Length headers claiming 2^31 elements, which once made the decoder
		// allocate for them and the process die of out-of-memory, and
		// nesting past the limit.
		f.Add(uint8(i), true, mpMap("checkpoint_ns", "", "checkpoint_id", "c", "scope", "", "writes", raw{0xdd, 0x7f, 0xff, 0xff, 0xff}))
		f.Add(uint8(i), true, mpMap("filter", raw{0xdf, 0xff, 0xff, 0xff, 0xff}))
		f.Add(uint8(i), true, mpMap("checkpoint_id", "c", "blobs", raw{0xdd, 0xff, 0xff, 0xff, 0xff}))
		f.Add(uint8(i), true, mpMap("checkpoint", raw(mpMap("type", "msgpack", "data", raw{0xc6, 0xff, 0xff, 0xff, 0xff}))))
		f.Add(uint8(i), true, mpMap("filter", raw(mpMap("a", nestedMsgpack(100)))))
		f.Add(uint8(i), false, []byte(`{"filter":{"a":`+strings.Repeat("[", 100)+strings.Repeat("]", 100)+`}}`))
		f.Add(uint8(i), false, []byte(`{"target_thread_id":"u\ud800","Key":"k","key":"k"}`))
		f.Add(uint8(i), false, []byte(`{"checkpoint_id":"c","channels":["messages"],"paged":true}`))
		f.Add(uint8(i), false, []byte(`{"dims":3,"ops":[{"op":"put","namespace":["a","b"],"key":"k","value":{"text":"hi","n":1},"vectors":[[1,0,0]],"ttl":5},`+
			`{"op":"get","namespace":["a","b"],"key":"k","refresh_ttl":true},`+
			`{"op":"search","namespace_prefix":["a"],"filter":{"n":{"$gte":1},"text":"hi"},"query":[0,1,0],"limit":5,"offset":1},`+
			`{"op":"list_namespaces","match_conditions":[{"match_type":"prefix","path":["a","*"]}],"max_depth":2,"limit":10}]}`))
		f.Add(uint8(i), true, mpMap("ops", raw{0xdd, 0x7f, 0xff, 0xff, 0xff}))
		// Vectors as bins of float32s: whole, not whole, and a header
		// claiming 4 GB.
		put := func(vector raw) []byte {
			return mpMap("dims", 1, "ops", raw(append([]byte{0x91}, mpMap("op", "put", "namespace", []string{"a"}, "key", "k",
				"value", []byte(`{}`), "vectors", raw(append([]byte{0x91}, vector...)))...)))
		}
		f.Add(uint8(i), true, put(raw{0xc4, 4, 0, 0, 0x80, 0x3f}))
		f.Add(uint8(i), true, put(raw{0xc4, 3, 0, 0, 0x80}))
		f.Add(uint8(i), true, put(raw{0xc6, 0xff, 0xff, 0xff, 0xfc}))
	}
	f.Fuzz(func(t *testing.T, route uint8, useMsgpack bool, body []byte) {
		s := MustMockServer(t, acceptingStore())
		ctype := "application/json"
		if useMsgpack {
			ctype = "application/msgpack"
		}
		rec := do(t, s, "POST", fuzzRoutes[int(route)%len(fuzzRoutes)], ctype, body)
		if rec.Code >= 500 {
			t.Fatalf("Code=%d for body %q: %s", rec.Code, body, rec.Body)
		}
		if rec.Code >= 400 {
			errorCode(t, rec)
		}
	})
}
