package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"

	"github.com/saver-dev/saver"
)

// The Store (LangGraph's BaseStore) is one route: a batch of ops answered
// in one request, results in op order, as BaseStore.batch is the one
// primitive every other method of the class calls.
func (s *Server) registerItemRoutes(g *echo.Group) {
	g.POST("/store/batch", s.handleStoreBatch, s.budgetAnswer)
}

// Op kinds on the wire.
const (
	opGet            = "get"
	opPut            = "put"
	opSearch         = "search"
	opListNamespaces = "list_namespaces"
)

// opDelete is how the metrics count a put whose value is null: BaseStore's
// delete, which the wire sends as a put.
const opDelete = "delete"

// storeBatchRequest is a batch. Dims is the length of every vector in it
// (the client's index config); absent or 0, the batch carries none.
type storeBatchRequest struct {
	Dims int           `json:"dims" msgpack:"dims"`
	Ops  []storeOpWire `json:"ops" msgpack:"ops"`
}

// storeOpWire is one op; Op says which, and which fields it reads.
// Values and filters are JSON objects: embedded in a JSON body, JSON text in
// a msgpack bin in a msgpack body, so that the service keeps what any
// client reads.
type storeOpWire struct {
	Op string `json:"op" msgpack:"op"`
	// get, put
	Namespace []string `json:"namespace" msgpack:"namespace"`
	Key       string   `json:"key" msgpack:"key"`
	// put: Value null deletes; TTL in minutes, null none.
	Value   json.RawMessage `json:"value" msgpack:"value"`
	Vectors []vectorWire    `json:"vectors" msgpack:"vectors"`
	TTL     *float64        `json:"ttl" msgpack:"ttl"`
	// get, search
	RefreshTTL bool `json:"refresh_ttl" msgpack:"refresh_ttl"`
	// search
	NamespacePrefix []string        `json:"namespace_prefix" msgpack:"namespace_prefix"`
	Filter          json.RawMessage `json:"filter" msgpack:"filter"`
	Query           vectorWire      `json:"query" msgpack:"query"`
	// search, list_namespaces
	Limit  *int `json:"limit" msgpack:"limit"`
	Offset int  `json:"offset" msgpack:"offset"`
	// list_namespaces
	MatchConditions []matchConditionWire `json:"match_conditions" msgpack:"match_conditions"`
	MaxDepth        *int                 `json:"max_depth" msgpack:"max_depth"`
}

// vectorWire is an embedding. In msgpack its numbers may be float64 (as
// Python writes floats) or integers, or it may be a bin of little-endian
// float32s, 4 bytes each (as the clients send it: a 384-dim vector is 1.5 KB
// instead of 3.5, and decodes without a call per number); the service keeps
// float32, as pgvector does.
type vectorWire []float32

func (vectorWire) decodesFromBin() {}

func (v *vectorWire) DecodeMsgpack(dec *msgpack.Decoder) error {
	code, err := dec.PeekCode()
	if err != nil {
		return err
	}
	if msgpcode.IsBin(code) {
		return v.decodeBin(dec)
	}
	n, err := dec.DecodeArrayLen()
	if err != nil || n < 0 {
		*v = nil
		return err
	}
	if n > saver.MaxVectorDims {
		return fmt.Errorf("a vector of %d numbers is over the limit of %d", n, saver.MaxVectorDims)
	}
	out := make([]float32, n)
	for i := range out {
		f, err := dec.DecodeFloat64()
		if err != nil {
			return err
		}
		out[i] = float32(f)
	}
	*v = out
	return nil
}

func (v *vectorWire) decodeBin(dec *msgpack.Decoder) error {
	b, err := dec.DecodeBytes()
	if err != nil {
		return err
	}
	if len(b)/4 > saver.MaxVectorDims {
		return fmt.Errorf("a vector of %d numbers is over the limit of %d", len(b)/4, saver.MaxVectorDims)
	}
	out, ok := saver.DecodeVector(b)
	if !ok {
		return fmt.Errorf("a vector as bytes holds little-endian float32s, 4 bytes each; %d bytes are not", len(b))
	}
	*v = out
	return nil
}

type matchConditionWire struct {
	MatchType string   `json:"match_type" msgpack:"match_type"`
	Path      []string `json:"path" msgpack:"path"`
}

type storeBatchResponse struct {
	Results []storeResultWire `json:"results" msgpack:"results"`
}

// storeResultWire is one op's result: item for a get that found one, items
// for a search, namespaces for a listing, nothing for a put (or a get that
// found nothing).
type storeResultWire struct {
	Item       *itemWire  `json:"item,omitempty" msgpack:"item,omitempty"`
	Items      []itemWire `json:"items,omitempty" msgpack:"items,omitempty"`
	Namespaces [][]string `json:"namespaces,omitempty" msgpack:"namespaces,omitempty"`
}

// itemWire is an item; times are ISO 8601 in UTC with microseconds, as
// Python's datetime.isoformat writes them.
type itemWire struct {
	Namespace []string        `json:"namespace" msgpack:"namespace"`
	Key       string          `json:"key" msgpack:"key"`
	Value     json.RawMessage `json:"value" msgpack:"value"`
	CreatedAt string          `json:"created_at" msgpack:"created_at"`
	UpdatedAt string          `json:"updated_at" msgpack:"updated_at"`
	Score     *float64        `json:"score,omitempty" msgpack:"score,omitempty"`
}

// Defaults of BaseStore's methods.
const (
	defaultSearchLimit = 10
	defaultListLimit   = 100
)

const isoMicros = "2006-01-02T15:04:05.000000+00:00"

func (s *Server) handleStoreBatch(c echo.Context) error {
	var req storeBatchRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	ops := make([]saver.ItemOp, len(req.Ops))
	for i, w := range req.Ops {
		op, err := w.itemOp()
		if err != nil {
			return saver.Errorf(saver.EINVALID, "ops[%d]: %s", i, saver.ErrorMessage(err))
		}
		ops[i] = op
	}
	if err := saver.ValidateItemOps(ops, saver.Index{Dims: req.Dims}); err != nil {
		return err
	}
	results, err := s.Items.Batch(c.Request().Context(), s.tenant(c), ops)
	if err != nil {
		return err
	}
	if s.Observer != nil {
		for _, w := range req.Ops {
			s.Observer.ObserveItemOp(w.kind())
		}
	}
	resp := storeBatchResponse{Results: make([]storeResultWire, len(results))}
	for i, r := range results {
		out := &resp.Results[i]
		if r.Item != nil {
			w := wireItem(*r.Item)
			out.Item = &w
		}
		for _, it := range r.Items {
			out.Items = append(out.Items, wireItem(it))
		}
		for _, ns := range r.Namespaces {
			out.Namespaces = append(out.Namespaces, ns)
		}
	}
	return respond(c, http.StatusOK, resp)
}

// itemOp converts an op from the wire; fields of other ops are refused, so
// that a misspelt op kind or a field in the wrong op is not silently lost.
func (w storeOpWire) itemOp() (saver.ItemOp, error) {
	limit := func(def int) int {
		if w.Limit == nil {
			return def
		}
		return *w.Limit
	}
	switch w.Op {
	case opGet:
		return saver.GetOp{Namespace: w.Namespace, Key: w.Key, RefreshTTL: w.RefreshTTL}, w.only("namespace", "key", "refresh_ttl")
	case opPut:
		ttl, err := minutes(w.TTL)
		if err != nil {
			return nil, err
		}
		var vectors [][]float32
		for _, v := range w.Vectors {
			vectors = append(vectors, v)
		}
		return saver.PutOp{Namespace: w.Namespace, Key: w.Key, Value: jsonOrNil(w.Value), Vectors: vectors, TTL: ttl},
			w.only("namespace", "key", "value", "vectors", "ttl")
	case opSearch:
		return &saver.SearchOp{
				Prefix: w.NamespacePrefix, Filter: jsonOrNil(w.Filter), Limit: limit(defaultSearchLimit), Offset: w.Offset,
				Query: []float32(w.Query), RefreshTTL: w.RefreshTTL,
			},
			w.only("namespace_prefix", "filter", "limit", "offset", "query", "refresh_ttl")
	case opListNamespaces:
		op := saver.ListNamespacesOp{Limit: limit(defaultListLimit), Offset: w.Offset}
		if w.MaxDepth != nil {
			if *w.MaxDepth <= 0 {
				return nil, saver.Errorf(saver.EINVALID, "max_depth must be positive.")
			}
			op.MaxDepth = *w.MaxDepth
		}
		for _, c := range w.MatchConditions {
			op.Conditions = append(op.Conditions, saver.MatchCondition{MatchType: c.MatchType, Path: c.Path})
		}
		return op, w.only("match_conditions", "max_depth", "limit", "offset")
	}
	return nil, saver.Errorf(saver.EINVALID, "op is %.40q; use get, put, search or list_namespaces.", w.Op)
}

// kind is the op's kind as the metrics count it: its op, or delete for a
// put without a value. The batch was validated, so it is one of five.
func (w storeOpWire) kind() string {
	if w.Op == opPut && jsonOrNil(w.Value) == nil {
		return opDelete
	}
	return w.Op
}

// only returns EINVALID naming the first field set that the op does not
// take.
func (w storeOpWire) only(fields ...string) error {
	set := map[string]bool{
		"namespace": w.Namespace != nil, "key": w.Key != "", "value": jsonOrNil(w.Value) != nil,
		"vectors": w.Vectors != nil, "ttl": w.TTL != nil, "refresh_ttl": w.RefreshTTL,
		"namespace_prefix": w.NamespacePrefix != nil, "filter": jsonOrNil(w.Filter) != nil,
		"query": w.Query != nil, "limit": w.Limit != nil, "offset": w.Offset != 0,
		"match_conditions": w.MatchConditions != nil, "max_depth": w.MaxDepth != nil,
	}
	for _, f := range fields {
		delete(set, f)
	}
	for _, f := range []string{"namespace", "key", "value", "vectors", "ttl", "refresh_ttl", "namespace_prefix", "filter", "query", "limit", "offset", "match_conditions", "max_depth"} {
		if set[f] {
			return saver.Errorf(saver.EINVALID, "%s is not a field of a %s op.", f, w.Op)
		}
	}
	return nil
}

// minutes turns a TTL in minutes (BaseStore's unit) into a Duration,
// checking the range before multiplying.
func minutes(m *float64) (time.Duration, error) {
	if m == nil {
		return 0, nil
	}
	if !(*m > 0) || *m > saver.MaxItemTTL.Minutes() || math.IsInf(*m, 0) {
		return 0, saver.Errorf(saver.EINVALID, "ttl is %s minutes; it must be positive and at most %.0f.",
			strconv.FormatFloat(*m, 'g', -1, 64), saver.MaxItemTTL.Minutes())
	}
	return time.Duration(*m * float64(time.Minute)), nil
}

// jsonOrNil is a raw JSON value, nil for an absent one or null.
func jsonOrNil(b json.RawMessage) []byte {
	if len(b) == 0 || bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return nil
	}
	return b
}

func wireItem(it saver.Item) itemWire {
	return itemWire{
		Namespace: it.Namespace, Key: it.Key, Value: it.Value, Score: it.Score,
		CreatedAt: it.CreatedAt.UTC().Format(isoMicros), UpdatedAt: it.UpdatedAt.UTC().Format(isoMicros),
	}
}
