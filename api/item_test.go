package api_test

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/saver-dev/saver/api/apitest"
	"github.com/saver-dev/saver/storetest"
)

type storeItem struct {
	Namespace []string        `json:"namespace" msgpack:"namespace"`
	Key       string          `json:"key" msgpack:"key"`
	Value     json.RawMessage `json:"value" msgpack:"value"`
	CreatedAt string          `json:"created_at" msgpack:"created_at"`
	UpdatedAt string          `json:"updated_at" msgpack:"updated_at"`
	Score     *float64        `json:"score" msgpack:"score"`
}

type storeResults struct {
	Results []struct {
		Item       *storeItem  `json:"item" msgpack:"item"`
		Items      []storeItem `json:"items" msgpack:"items"`
		Namespaces [][]string  `json:"namespaces" msgpack:"namespaces"`
	} `json:"results" msgpack:"results"`
}

func TestStoreBatchJSON(t *testing.T) {
	s := MustEmbeddedServer(t, storetest.NewClock())
	rec := do(t, s, "POST", "/v1/store/batch", "application/json", []byte(`{"dims": 2, "ops": [
		{"op": "put", "namespace": ["users", "u1"], "key": "a", "value": {"food": "pizza", "n": 1}, "vectors": [[1, 0]], "ttl": 5},
		{"op": "put", "namespace": ["users", "u2"], "key": "b", "value": {"food": "sushi", "n": 2}, "vectors": [[0, 1]]}
	]}`))
	if rec.Code != 200 {
		t.Fatalf("put: %d %s", rec.Code, rec.Body)
	}
	rec = do(t, s, "POST", "/v1/store/batch", "application/json", []byte(`{"dims": 2, "ops": [
		{"op": "get", "namespace": ["users", "u1"], "key": "a", "refresh_ttl": true},
		{"op": "get", "namespace": ["users", "u1"], "key": "missing"},
		{"op": "search", "namespace_prefix": ["users"], "query": [1, 0.1], "filter": {"n": {"$gte": 1}}},
		{"op": "search", "namespace_prefix": ["users"], "filter": {"food": "sushi"}},
		{"op": "list_namespaces", "match_conditions": [{"match_type": "prefix", "path": ["users", "*"]}], "max_depth": 2}
	]}`))
	if rec.Code != 200 {
		t.Fatalf("read: %d %s", rec.Code, rec.Body)
	}
	var got storeResults
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	r := got.Results
	if len(r) != 5 || r[0].Item == nil || string(r[0].Item.Value) != `{"food":"pizza","n":1}` || r[1].Item != nil {
		t.Fatalf("gets: %s", rec.Body)
	}
	if !strings.HasSuffix(r[0].Item.CreatedAt, "+00:00") || len(r[0].Item.CreatedAt) != len("2006-01-02T15:04:05.000000+00:00") {
		t.Fatalf("created_at %q, want ISO 8601 with microseconds", r[0].Item.CreatedAt)
	}
	if len(r[2].Items) != 2 || r[2].Items[0].Key != "a" || r[2].Items[0].Score == nil || *r[2].Items[0].Score < *r[2].Items[1].Score {
		t.Fatalf("vector search: %s", rec.Body)
	}
	if len(r[3].Items) != 1 || r[3].Items[0].Key != "b" || r[3].Items[0].Score != nil {
		t.Fatalf("filtered search: %s", rec.Body)
	}
	if len(r[4].Namespaces) != 2 || strings.Join(r[4].Namespaces[1], "/") != "users/u2" {
		t.Fatalf("list_namespaces: %s", rec.Body)
	}
}

func TestStoreBatchMsgpack(t *testing.T) {
	s := MustEmbeddedServer(t, storetest.NewClock())
	body, _ := msgpack.Marshal(map[string]any{"dims": 2, "ops": []map[string]any{
		{"op": "put", "namespace": []string{"n"}, "key": "k", "value": []byte(`{"x": [1, 2]}`), "vectors": [][]float64{{0.5, 0.25}}},
	}})
	if rec := do(t, s, "POST", "/v1/store/batch", "application/msgpack", body); rec.Code != 200 {
		t.Fatalf("put: %d %s", rec.Code, rec.Body)
	}
	body, _ = msgpack.Marshal(map[string]any{"dims": 2, "ops": []map[string]any{
		{"op": "search", "namespace_prefix": []string{"n"}, "query": []float64{0.5, 0.25}, "filter": []byte(`{"x": [1, 2]}`)},
	}})
	rec := do(t, s, "POST", "/v1/store/batch", "application/msgpack", body)
	if rec.Code != 200 {
		t.Fatalf("search: %d %s", rec.Code, rec.Body)
	}
	var got storeResults
	if err := msgpack.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if items := got.Results[0].Items; len(items) != 1 || string(items[0].Value) != `{"x": [1, 2]}` || *items[0].Score < 0.999999 {
		t.Fatalf("search: %+v", got)
	}
}

// TestStoreVectorsAsBytes: in msgpack a vector may be a bin of
// little-endian float32s; it is kept and scored as the same numbers sent as
// an array, and a bin that is not whole float32s, is too long, holds a NaN,
// or stands where no vector goes is a 400 that stores nothing.
func TestStoreVectorsAsBytes(t *testing.T) {
	s := MustEmbeddedServer(t, storetest.NewClock())
	f32 := func(xs ...float32) []byte {
		b := make([]byte, 0, 4*len(xs))
		for _, x := range xs {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
		return b
	}
	batch := func(ops ...map[string]any) *httptest.ResponseRecorder {
		body, err := msgpack.Marshal(map[string]any{"dims": 3, "ops": ops})
		if err != nil {
			t.Fatal(err)
		}
		return do(t, s, "POST", "/v1/store/batch", "application/msgpack", body)
	}
	put := func(key string, vector any) map[string]any {
		return map[string]any{"op": "put", "namespace": []string{"n"}, "key": key, "value": []byte(`{}`), "vectors": []any{vector}}
	}
	if rec := batch(put("bytes", f32(0.5, -0.25, 3)), put("numbers", []float64{0.5, -0.25, 3}), put("other", []float64{-1, 0, 0})); rec.Code != 200 {
		t.Fatalf("put: %d %s", rec.Code, rec.Body)
	}
	for _, query := range []any{f32(0.5, -0.25, 3), []float64{0.5, -0.25, 3}} {
		rec := batch(map[string]any{"op": "search", "namespace_prefix": []string{"n"}, "query": query})
		var got storeResults
		if err := msgpack.Unmarshal(rec.Body.Bytes(), &got); rec.Code != 200 || err != nil {
			t.Fatalf("search: %d %s (%v)", rec.Code, rec.Body, err)
		}
		items := got.Results[0].Items
		if len(items) != 3 || *items[0].Score < 0.999999 || *items[1].Score != *items[0].Score || *items[2].Score >= 0 {
			t.Fatalf("search with %T: %+v", query, got)
		}
	}
	for _, tt := range []struct {
		name      string
		op        map[string]any
		inMessage string
	}{
		{"NotWholeFloats", put("k", append(f32(1, 2, 3), 0)), "13 bytes are not whole elements of 4 bytes at ops[1].vectors[0]"},
		{"Long", put("k", make([]byte, 4*4097)), "4097 numbers is over the limit"},
		{"Dims", put("k", f32(1, 2)), "ops[1]: vectors[0] has 2 dims"},
		{"NaN", put("k", f32(1, float32(math.NaN()), 3)), "ops[1]: vectors[0] holds a NaN"},
		{"Inf", map[string]any{"op": "search", "query": f32(1, float32(math.Inf(1)), 3)}, "ops[1]: query holds a NaN or infinite"},
		{"VectorsAsBytes", map[string]any{"op": "put", "namespace": []string{"n"}, "key": "k", "value": []byte(`{}`), "vectors": f32(1, 2, 3)}, "want an array, got a scalar at ops[1].vectors"},
		{"NamespaceAsBytes", map[string]any{"op": "put", "namespace": []byte("n"), "key": "k", "value": []byte(`{}`)}, "want an array, got a scalar at ops[1].namespace"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := batch(put("kept", f32(1, 0, 0)), tt.op)
			if rec.Code != 400 || errorCode(t, rec) != "invalid" || !strings.Contains(rec.Body.String(), tt.inMessage) {
				t.Fatalf("%d %s, want 400 naming %q", rec.Code, rec.Body, tt.inMessage)
			}
			rec = batch(map[string]any{"op": "get", "namespace": []string{"n"}, "key": "kept"})
			if rec.Code != 200 || strings.Contains(rec.Body.String(), "kept") {
				t.Fatalf("the valid op of a refused batch was stored: %d %q", rec.Code, rec.Body)
			}
		})
	}
	// JSON has no bytes: a vector there is an array of numbers.
	rec := do(t, s, "POST", "/v1/store/batch", "application/json",
		[]byte(`{"dims": 3, "ops": [{"op": "search", "query": "AACAPwAAAEAAAEBA"}]}`))
	if rec.Code != 400 {
		t.Fatalf("a JSON vector as a string: %d %s, want 400", rec.Code, rec.Body)
	}
}

// TestStoreBatchInvalid checks that a bad op is a 400 naming it and its
// field, and that nothing of its batch is stored.
func TestStoreBatchInvalid(t *testing.T) {
	s := MustEmbeddedServer(t, storetest.NewClock())
	tests := []struct{ name, op, inMessage string }{
		{"EmptyLabel", `{"op": "put", "namespace": ["a", ""], "key": "k", "value": {}}`, "ops[1]: namespace[1]"},
		{"DotLabel", `{"op": "put", "namespace": ["a.b"], "key": "k", "value": {}}`, "ops[1]: namespace[0]"},
		{"LongKey", `{"op": "put", "namespace": ["a"], "key": "` + strings.Repeat("!", 200) + `", "value": {}}`, "ops[1]: key takes"},
		{"ValueNotObject", `{"op": "put", "namespace": ["a"], "key": "k", "value": [1]}`, "ops[1]: value"},
		{"VectorLength", `{"op": "put", "namespace": ["a"], "key": "k", "value": {}, "vectors": [[1, 2, 3]]}`, "ops[1]: vectors[0] has 3 dims"},
		{"FilterShape", `{"op": "search", "namespace_prefix": ["a"], "filter": {"n": {"$gt": "x"}}}`, "ops[1]: filter.n.$gt"},
		{"FilterNotObject", `{"op": "search", "filter": [1]}`, "ops[1]: filter must be a JSON object"},
		{"QueryLength", `{"op": "search", "query": [1]}`, "ops[1]: query has 1 dims"},
		{"TTL", `{"op": "put", "namespace": ["a"], "key": "k", "value": {}, "ttl": -1}`, "ops[1]: ttl"},
		{"UnknownOp", `{"op": "delete", "namespace": ["a"], "key": "k"}`, "ops[1]: op"},
		{"ForeignField", `{"op": "get", "namespace": ["a"], "key": "k", "filter": {}}`, "ops[1]: filter is not a field of a get op"},
		{"MaxDepth", `{"op": "list_namespaces", "max_depth": 0}`, "ops[1]: max_depth"},
		{"Limit", `{"op": "search", "limit": 100000}`, "ops[1]: limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"dims": 2, "ops": [{"op": "put", "namespace": ["kept"], "key": "` + tt.name + `", "value": {}}, ` + tt.op + `]}`
			rec := do(t, s, "POST", "/v1/store/batch", "application/json", []byte(body))
			if rec.Code != 400 || errorCode(t, rec) != "invalid" || !strings.Contains(rec.Body.String(), tt.inMessage) {
				t.Fatalf("%d %s, want 400 naming %q", rec.Code, rec.Body, tt.inMessage)
			}
			rec = do(t, s, "POST", "/v1/store/batch", "application/json", []byte(`{"ops": [{"op": "get", "namespace": ["kept"], "key": "`+tt.name+`"}]}`))
			if rec.Code != 200 || strings.Contains(rec.Body.String(), `"item"`) {
				t.Fatalf("the valid op of a refused batch was stored: %s", rec.Body)
			}
		})
	}
	t.Run("UnknownField", func(t *testing.T) {
		rec := do(t, s, "POST", "/v1/store/batch", "application/json", []byte(`{"ops": [{"op": "get", "namespace": ["a"], "key": "k", "nope": 1}]}`))
		if rec.Code != 400 {
			t.Fatalf("%d %s, want 400", rec.Code, rec.Body)
		}
	})
}

// TestStoreRouteNeedsCapability: a store without items never has the route.
func TestStoreRouteNeedsCapability(t *testing.T) {
	s := MustServer(t, &apitest.Store{})
	rec := do(t, s, "POST", "/v1/store/batch", "application/json", []byte(`{"ops": []}`))
	if rec.Code != 404 {
		t.Fatalf("without Items: %d, want 404", rec.Code)
	}
}

// opKinds records the Store op kinds the server tells its Observer.
type opKinds struct {
	labels
	kinds map[string]int
}

func (o *opKinds) ObserveItemOp(kind string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.kinds[kind]++
}

// TestStoreOpKinds: every op of a batch that ran is counted by its kind, a
// put of null as a delete (in JSON and in msgpack), and a refused batch
// counts nothing, so the label keeps its five values whatever clients send.
func TestStoreOpKinds(t *testing.T) {
	s := MustEmbeddedServer(t, storetest.NewClock())
	o := &opKinds{labels: labels{seen: map[[2]string]int{}}, kinds: map[string]int{}}
	s.Observer = o
	rec := do(t, s, "POST", "/v1/store/batch", "application/json", []byte(`{"ops": [
		{"op": "put", "namespace": ["a"], "key": "k", "value": {"x": 1}},
		{"op": "put", "namespace": ["a"], "key": "gone", "value": null},
		{"op": "put", "namespace": ["a"], "key": "also-gone"},
		{"op": "get", "namespace": ["a"], "key": "k"},
		{"op": "search", "namespace_prefix": ["a"]},
		{"op": "list_namespaces"}
	]}`))
	if rec.Code != 200 {
		t.Fatalf("batch: %d %s", rec.Code, rec.Body)
	}
	body, _ := msgpack.Marshal(map[string]any{"ops": []map[string]any{
		{"op": "put", "namespace": []string{"a"}, "key": "k", "value": nil},
		{"op": "put", "namespace": []string{"a"}, "key": "k2", "value": []byte(`{"y": 2}`)},
	}})
	if rec := do(t, s, "POST", "/v1/store/batch", "application/msgpack", body); rec.Code != 200 {
		t.Fatalf("msgpack batch: %d %s", rec.Code, rec.Body)
	}
	for _, bad := range []string{
		`{"ops": [{"op": "get", "namespace": ["a"], "key": "k"}, {"op": "frobnicate"}]}`,
		`{"ops": [{"op": "get", "namespace": [], "key": "k"}]}`,
	} {
		if rec := do(t, s, "POST", "/v1/store/batch", "application/json", []byte(bad)); rec.Code != 400 {
			t.Fatalf("%s: %d, want 400", bad, rec.Code)
		}
	}
	want := map[string]int{"put": 2, "delete": 3, "get": 1, "search": 1, "list_namespaces": 1}
	if !reflect.DeepEqual(o.kinds, want) {
		t.Fatalf("kinds %v, want %v", o.kinds, want)
	}
}
