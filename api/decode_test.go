package api_test

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/api/apitest"
)

// raw is msgpack bytes put into a body as they are, where the encoder would
// never write them.
type raw []byte

// mpMap builds a msgpack map of key, value pairs: a raw value goes in as it
// is, any other value is encoded. Keys may repeat, as a hostile client's may.
func mpMap(kv ...any) []byte {
	b := []byte{0x80 | byte(len(kv)/2)}
	for i := 0; i < len(kv); i += 2 {
		k, _ := msgpack.Marshal(kv[i])
		b = append(b, k...)
		switch v := kv[i+1].(type) {
		case raw:
			b = append(b, v...)
		default:
			e, err := msgpack.Marshal(v)
			if err != nil {
				panic(err)
			}
			b = append(b, e...)
		}
	}
	return b
}

// nestedMsgpack is n one-element arrays, one inside the other, around a nil.
func nestedMsgpack(n int) raw {
	return raw(append(bytes.Repeat([]byte{0x91}, n), 0xc0))
}

// TestDecodeBounds sends bodies whose length headers claim far more than the
// body holds, or that nest without end. Before the decoders were bounded the
// first one made the process allocate for 2^31 elements and die of
// out-of-memory; the deep ones overflowed the stack. Each must be a 400 that
// costs about what the body weighs.
func TestDecodeBounds(t *testing.T) {
	const mp, js = "application/msgpack", "application/json"
	deepJSON := func(n int) []byte {
		return []byte(`{"filter":{"a":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}}`)
	}
	tests := []struct {
		name, path, ctype string
		body              []byte
	}{
		{"WritesArray32", "/v1/threads/t/writes", mp, mpMap("checkpoint_id", "c", "writes", raw{0xdd, 0x7f, 0xff, 0xff, 0xff})},
		{"WritesArray32Of45Bytes", "/v1/threads/t/writes", mp, mpMap("checkpoint_ns", "", "checkpoint_id", "c", "scope", "", "writes", raw{0xdd, 0x7f, 0xff, 0xff, 0xff})},
		{"FilterMap32", "/v1/checkpoints/search", mp, mpMap("filter", raw{0xdf, 0xff, 0xff, 0xff, 0xff})},
		{"BlobsArray32", "/v1/threads/t/checkpoints", mp, mpMap("checkpoint_id", "c", "blobs", raw{0xdd, 0xff, 0xff, 0xff, 0xff})},
		{"MetadataMap32", "/v1/threads/t/checkpoints", mp, mpMap("checkpoint_id", "c", "metadata", raw{0xdf, 0x7f, 0xff, 0xff, 0xff})},
		{"ChannelVersionsMap16", "/v1/threads/t/checkpoints", mp, mpMap("checkpoint_id", "c", "channel_versions", raw{0xde, 0xff, 0xff})},
		{"RunIDsArray16", "/v1/runs/delete", mp, mpMap("run_ids", raw{0xdc, 0xff, 0xff, 0xa1, 'r'})},
		{"Str32", "/v1/threads/t/checkpoints", mp, mpMap("checkpoint_id", raw{0xdb, 0xff, 0xff, 0xff, 0xff})},
		{"Bin32", "/v1/threads/t/checkpoints", mp, mpMap("checkpoint_id", "c", "checkpoint", raw(mpMap("type", "msgpack", "data", raw{0xc6, 0xff, 0xff, 0xff, 0xff})))},
		{"Ext32", "/v1/checkpoints/search", mp, mpMap("filter", raw(mpMap("a", raw{0xc9, 0xff, 0xff, 0xff, 0xff, 0x01})))},
		{"NestedMsgpack2_5M", "/v1/checkpoints/search", mp, mpMap("filter", raw(mpMap("a", nestedMsgpack(2_500_000))))},
		{"NestedMsgpackOverLimit", "/v1/checkpoints/search", mp, mpMap("filter", raw(mpMap("a", nestedMsgpack(63))))},
		{"NestedJSON2_5M", "/v1/checkpoints/search", js, deepJSON(2_500_000)},
		{"NestedJSONOverLimit", "/v1/checkpoints/search", js, deepJSON(63)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := MustMockServer(t, &apitest.Store{}) // any store call panics: bad input must not reach it
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			rec := do(t, s, "POST", tt.path, tt.ctype, tt.body)
			runtime.ReadMemStats(&after)
			if got, want := rec.Code, 400; got != want {
				t.Fatalf("Code=%d, want %d (body %.300s)", got, want, rec.Body)
			}
			if got, want := errorCode(t, rec), saver.EINVALID; got != want {
				t.Fatalf("code=%q, want %q", got, want)
			}
			// A refused body may cost a few times its size, never what its
			// headers claim.
			if alloc, limit := after.TotalAlloc-before.TotalAlloc, uint64(16*len(tt.body)+8<<20); alloc > limit {
				t.Fatalf("decoding a %d-byte body allocated %d bytes; the bound is %d", len(tt.body), alloc, limit)
			}
		})
	}
}

// TestDecodeStrict: field names match exactly, a key given twice is refused
// in both codecs, a struct is a map (never a positional array), and a
// Content-Type that does not parse is 415, not JSON.
func TestDecodeStrict(t *testing.T) {
	const mp, js = "application/msgpack", "application/json"
	put := `"checkpoint":{"type":"msgpack","data":""}`
	tests := []struct {
		name, path, ctype string
		body              []byte
		status            int
		code              string
	}{
		{"JSONFieldCase", "/v1/threads/t/checkpoints", js, []byte(`{"Checkpoint_ID":"c",` + put + `}`), 400, "invalid"},
		{"JSONNestedFieldCase", "/v1/threads/t/checkpoints", js, []byte(`{"checkpoint_id":"c","checkpoint":{"TYPE":"msgpack","data":""}}`), 400, "invalid"},
		{"JSONDuplicateField", "/v1/threads/t/checkpoints", js, []byte(`{"checkpoint_id":"a","checkpoint_id":"b",` + put + `}`), 400, "invalid"},
		{"JSONDuplicateEscapedField", "/v1/threads/t/checkpoints", js, []byte(`{"checkpoint_id":"a","checkpoint\u005fid":"b",` + put + `}`), 400, "invalid"},
		{"JSONDuplicateMetadataKey", "/v1/threads/t/checkpoints", js, []byte(`{"checkpoint_id":"a","metadata":{"step":1,"step":2},` + put + `}`), 400, "invalid"},
		{"JSONDuplicateFilterKey", "/v1/checkpoints/search", js, []byte(`{"filter":{"a":{"b":1,"b":1}}}`), 400, "invalid"},
		{"MsgpackDuplicateField", "/v1/threads/t/copy", mp, mpMap("target_thread_id", "a", "target_thread_id", "b"), 400, "invalid"},
		{"MsgpackDuplicateMetadataKey", "/v1/checkpoints/search", mp, mpMap("filter", raw(mpMap("step", 1, "step", 2))), 400, "invalid"},
		{"MsgpackDuplicateKeyOtherEncoding", "/v1/checkpoints/search", mp, mpMap("filter", raw(mpMap("a", 1, raw{0xd9, 1, 'a'}, 2))), 400, "invalid"},
		{"MsgpackDuplicateChannel", "/v1/threads/t/checkpoints", mp, mpMap("checkpoint_id", "c", "checkpoint", map[string]any{"type": "msgpack", "data": []byte{}}, "channel_versions", raw(mpMap("a", "1", "a", "2"))), 400, "invalid"},
		{"MsgpackStructAsArray", "/v1/threads/t/copy", mp, []byte{0x91, 0xa1, 'a'}, 400, "invalid"},
		{"MsgpackNonStringFieldName", "/v1/threads/t/copy", mp, []byte{0x81, 0x01, 0xa1, 'a'}, 400, "invalid"},
		{"UnparsableContentType", "/v1/threads/t/copy", "a/b;;", []byte(`{"target_thread_id":"u"}`), 415, "unsupported_media_type"},
		{"JSONNotUTF8Charset", "/v1/threads/t/copy", "application/json; charset=latin1", []byte(`{"target_thread_id":"u"}`), 415, "unsupported_media_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := MustMockServer(t, &apitest.Store{})
			rec := do(t, s, "POST", tt.path, tt.ctype, tt.body)
			if got, want := rec.Code, tt.status; got != want {
				t.Fatalf("Code=%d, want %d (body %s)", got, want, rec.Body)
			}
			if got, want := errorCode(t, rec), tt.code; got != want {
				t.Fatalf("code=%q, want %q", got, want)
			}
		})
	}
}

// TestDecodeStrict_Accepts keeps what real clients send working: the exact
// names, a charset on JSON, escaped keys and a surrogate pair.
func TestDecodeStrict_Accepts(t *testing.T) {
	var got []string
	s := MustMockServer(t, &apitest.Store{CopyThreadFn: func(_ context.Context, _, _, dst string) error {
		got = append(got, dst)
		return nil
	}})
	for _, tt := range []struct {
		ctype string
		body  []byte
		want  string
	}{
		{"application/json; charset=UTF-8", []byte(`{"target_thread_id":"u"}`), "u"},
		{"", []byte(` {"target\u005fthread_id" : "v\ud83d\ude00"} `), "v\U0001F600"},
		{"application/msgpack", mpMap("target_thread_id", "w"), "w"},
		{"application/msgpack", mpMap("target_thread_id", raw{0xd9, 1, 'x'}), "x"},
	} {
		rec := do(t, s, "POST", "/v1/threads/t/copy", tt.ctype, tt.body)
		if rec.Code != 204 {
			t.Fatalf("%s %q: Code=%d, body %s", tt.ctype, tt.body, rec.Code, rec.Body)
		}
		if got[len(got)-1] != tt.want {
			t.Fatalf("%s %q: target %q, want %q", tt.ctype, tt.body, got[len(got)-1], tt.want)
		}
	}
}

// TestJSONInvalidUTF8: JSON ids that differ only in bytes that are not UTF-8
// (or in escapes that are no character) used to reach the store as the same
// id, U+FFFD, so the second put overwrote the first. They are refused before
// decoding, as the msgpack path refuses them in validation.
func TestJSONInvalidUTF8(t *testing.T) {
	const js = "application/json"
	tests := []struct {
		name, path string
		body       []byte
	}{
		{"CheckpointIDByte", "/v1/threads/t/checkpoints", []byte("{\"checkpoint_id\":\"c\xff\",\"checkpoint\":{\"type\":\"msgpack\",\"data\":\"\"}}")},
		{"CheckpointIDOtherByte", "/v1/threads/t/checkpoints", []byte("{\"checkpoint_id\":\"c\xfe\",\"checkpoint\":{\"type\":\"msgpack\",\"data\":\"\"}}")},
		{"CopyTarget", "/v1/threads/t/copy", []byte("{\"target_thread_id\":\"u\xc3\"}")},
		{"MetadataKey", "/v1/checkpoints/search", []byte("{\"filter\":{\"k\xff\":1}}")},
		{"LoneHighSurrogate", "/v1/threads/t/copy", []byte(`{"target_thread_id":"u\ud800"}`)},
		{"LoneLowSurrogate", "/v1/threads/t/copy", []byte(`{"target_thread_id":"u\udc00x"}`)},
		{"ReversedPair", "/v1/threads/t/copy", []byte(`{"target_thread_id":"\ude00\ud83d"}`)},
		{"KeyLoneSurrogate", "/v1/checkpoints/search", []byte(`{"filter":{"\ud800":1}}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := MustMockServer(t, &apitest.Store{}) // the store is never reached
			rec := do(t, s, "POST", tt.path, js, tt.body)
			if got, want := rec.Code, 400; got != want {
				t.Fatalf("Code=%d, want %d (body %s)", got, want, rec.Body)
			}
			if got, want := errorCode(t, rec), saver.EINVALID; got != want {
				t.Fatalf("code=%q, want %q", got, want)
			}
		})
	}
}

// TestDecodeBudget: a body within the size limit whose every element is one
// byte (a nil, an empty map) once decoded to 194 times its size, 777 MB for
// 4 MB of writes, before the handler's count limit saw it. The scanner
// counts what the decoded form will take and refuses it first, at the cost
// of reading the body (io.ReadAll grows its buffer by doubling).
func TestDecodeBudget(t *testing.T) {
	n := 4 << 20
	array32 := func(elem byte) raw {
		return raw(append([]byte{0xdd, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}, bytes.Repeat([]byte{elem}, n)...))
	}
	tests := []struct {
		name, ctype string
		body        []byte
	}{
		{"MsgpackNils", "application/msgpack", mpMap("checkpoint_id", "c", "writes", array32(0xc0))},
		{"MsgpackEmptyMaps", "application/msgpack", mpMap("checkpoint_id", "c", "writes", array32(0x80))},
		{"JSONNulls", "application/json", []byte(`{"checkpoint_id":"c","writes":[null` + strings.Repeat(",null", n/5) + `]}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := MustMockServer(t, &apitest.Store{})
			s.MaxBodyBytes = int64(2 * n)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			rec := do(t, s, "POST", "/v1/threads/t/writes", tt.ctype, tt.body)
			runtime.ReadMemStats(&after)
			if got, want := rec.Code, 413; got != want {
				t.Fatalf("Code=%d, want %d (body %.300s)", got, want, rec.Body)
			}
			if alloc, limit := after.TotalAlloc-before.TotalAlloc, uint64(8*len(tt.body)); alloc > limit {
				t.Fatalf("a %d-byte body allocated %d bytes; the bound is %d", len(tt.body), alloc, limit)
			}
		})
	}
}

// TestDecodeAmplification: a 4 MB body of four million empty maps in a
// checkpoint's metadata was within every limit (the scan counted 16 bytes a
// map), was stored, and took the process to 558 MB; eight at once ended in
// out-of-memory. The scan counts what each map takes in Go's heap and how
// many values the body holds: 413, nothing stored, in both codecs, at a
// cost of a few times the body.
func TestDecodeAmplification(t *testing.T) {
	n := 4 << 20
	emptyMaps := raw(append([]byte{0xdd, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}, bytes.Repeat([]byte{0x80}, n)...))
	checkpoint := map[string]any{"type": "msgpack", "data": []byte{}}
	jsPut := func(metadata string) []byte {
		return []byte(`{"checkpoint_id":"c","checkpoint":{"type":"msgpack","data":""},"metadata":` + metadata + `}`)
	}
	tests := []struct {
		name, path, ctype string
		body              []byte
	}{
		{"MsgpackMetadata", "/v1/threads/t/checkpoints", "application/msgpack", mpMap("checkpoint_id", "c", "checkpoint", checkpoint, "metadata", raw(mpMap("a", emptyMaps)))},
		{"MsgpackMetadataNested", "/v1/threads/t/checkpoints", "application/msgpack", mpMap("checkpoint_id", "c", "checkpoint", checkpoint, "metadata", raw(mpMap("a", raw(mpMap("b", emptyMaps)))))},
		{"MsgpackFilter", "/v1/checkpoints/search", "application/msgpack", mpMap("filter", raw(mpMap("a", emptyMaps)))},
		{"JSONMetadata", "/v1/threads/t/checkpoints", "application/json", jsPut(`{"a":[{}` + strings.Repeat(",{}", n-1) + `]}`)},
		{"JSONMetadataEmptyArrays", "/v1/threads/t/checkpoints", "application/json", jsPut(`{"a":[[]` + strings.Repeat(",[]", n-1) + `]}`)},
		{"JSONFilter", "/v1/checkpoints/search", "application/json", []byte(`{"filter":{"a":[{}` + strings.Repeat(",{}", n-1) + `]}}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := MustMockServer(t, &apitest.Store{}) // any store call panics: nothing may be stored or listed
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			rec := do(t, s, "POST", tt.path, tt.ctype, tt.body)
			runtime.ReadMemStats(&after)
			if got, want := rec.Code, 413; got != want {
				t.Fatalf("Code=%d, want %d (body %.300s)", got, want, rec.Body)
			}
			if got, want := errorCode(t, rec), saver.ETOOLARGE; got != want {
				t.Fatalf("code=%q, want %q", got, want)
			}
			if alloc, limit := after.TotalAlloc-before.TotalAlloc, uint64(8*len(tt.body)); alloc > limit {
				t.Fatalf("a %d-byte body allocated %d bytes; the bound is %d", len(tt.body), alloc, limit)
			}
		})
	}
}
