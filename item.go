package saver

import (
	"context"
	"strconv"
	"time"
)

// Item is a value LangGraph's BaseStore keeps under a namespace and a key:
// an agent's long-term memory, shared across threads. Value is a JSON object
// as its bytes, so that clients in any language read what another wrote;
// stores keep it byte for byte.
type Item struct {
	Namespace Namespace
	Key       string
	Value     []byte
	// CreatedAt is when the key was first put; an update keeps it (as
	// PostgresStore does). UpdatedAt is the last put.
	CreatedAt, UpdatedAt time.Time
	// Score is the similarity of a search with a query; nil otherwise.
	Score *float64
}

// ItemOp is one operation of a batch: a GetOp, PutOp, SearchOp or
// ListNamespacesOp (a delete is a PutOp with a nil Value).
type ItemOp interface {
	// Validate checks the op before it reaches a store; index names the
	// batch's embeddings (zero dims: no vectors).
	Validate(index Index) error
	itemOp()
}

// Index describes the vectors of a batch: each has Dims numbers. The client
// holds the index config (its embedding function and fields) and sends the
// dims with every batch; the service keeps and compares vectors only.
type Index struct{ Dims int }

// GetOp reads one item.
type GetOp struct {
	Namespace Namespace
	Key       string
	// RefreshTTL restarts the item's TTL, if it has one, when it is found.
	RefreshTTL bool
}

// PutOp stores an item, or deletes it when Value is nil.
type PutOp struct {
	Namespace Namespace
	Key       string
	// Value is a JSON object; nil deletes the item.
	Value []byte
	// Vectors are the embeddings of the item's indexed fields. They
	// replace the item's vectors: an item put without any is not found by
	// a search with a query.
	Vectors [][]float32
	// TTL is how long the item lives after the put (and after each
	// refresh); 0 forever.
	TTL time.Duration
}

// SearchOp finds the items under a namespace prefix that pass a filter:
// ranked by similarity to Query when it is given, newest update first
// otherwise.
type SearchOp struct {
	Prefix Namespace
	// Filter is a JSON object of conditions on the value (ItemFilter);
	// nil matches every item.
	Filter        []byte
	Limit, Offset int
	// Query is the query's embedding; nil for a search without one.
	Query []float32
	// RefreshTTL restarts the TTL of the items returned.
	RefreshTTL bool

	filter *ItemFilter // parsed by Validate
}

// ListNamespacesOp lists the distinct namespaces that hold items, in tuple
// order, those matching every condition, truncated to MaxDepth labels.
type ListNamespacesOp struct {
	Conditions []MatchCondition
	// MaxDepth truncates namespaces to their first labels; 0 keeps them whole.
	MaxDepth      int
	Limit, Offset int
}

func (GetOp) itemOp()            {}
func (PutOp) itemOp()            {}
func (*SearchOp) itemOp()        {}
func (ListNamespacesOp) itemOp() {}

// ItemFilter returns the op's filter, parsed by Validate; nil when the op
// has none.
func (op *SearchOp) ItemFilter() *ItemFilter { return op.filter }

// ItemResult is one op's result, in the batch's order: Item for a get (nil
// when absent), Items for a search, Namespaces for a listing; nothing for a
// put.
type ItemResult struct {
	Item       *Item
	Items      []Item
	Namespaces []Namespace
}

// ItemStore keeps items per tenant with the semantics of LangGraph's
// BaseStore, following PostgresStore where InMemoryStore differs (see
// docs/api.md).
//
// Ops reaching a store have been validated (ValidateItemOps), the search ops
// with their filters parsed; stores may rely on it.
type ItemStore interface {
	// Batch runs ops for tenant and returns their results in op order.
	// Reads (get, search, list_namespaces) see the items as they were
	// before the batch; its puts are applied after them, the last put of a
	// key winning. Expired items are never returned, nor counted by a
	// listing. Returns EUNAVAILABLE when the backend cannot answer. How
	// much of a batch is written at once is the store's to say: the
	// embedded store writes its puts and TTL refreshes all or none; DynamoDB
	// its puts all or none up to 100 (a transaction), and each refresh on
	// its own.
	Batch(ctx context.Context, tenant string, ops []ItemOp) ([]ItemResult, error)
}

// Limits on batches and their ops.
const (
	MaxItemOps      = 1000 // ops in one batch
	MaxSearchLimit  = 1000
	MaxSearchOffset = 10000 // bounds a search's top-k selection: offset+limit entries
	MaxListLimit    = 10000
	MaxVectorDims   = 4096
	MaxItemVectors  = 256 // vectors of one item: one per indexed text
	// MaxItemTTL bounds a TTL so that an expiry in Unix nanoseconds cannot
	// overflow.
	MaxItemTTL = 100 * 365 * 24 * time.Hour
)

// ValidateItemOps checks every op of a batch, so that a bad one stores
// nothing: the first error names the op by its index.
func ValidateItemOps(ops []ItemOp, index Index) error {
	if len(ops) > MaxItemOps {
		return Errorf(EINVALID, "ops has %d ops; the limit is %d.", len(ops), MaxItemOps)
	}
	if index.Dims < 0 || index.Dims > MaxVectorDims {
		return Errorf(EINVALID, "dims is %d; it must be between 0 and %d.", index.Dims, MaxVectorDims)
	}
	for i, op := range ops {
		if op == nil {
			return Errorf(EINVALID, "ops[%d] is empty.", i)
		}
		if err := op.Validate(index); err != nil {
			if e, ok := err.(*Error); ok {
				return Errorf(e.Code, "ops[%d]: %s", i, e.Message)
			}
			return err
		}
	}
	return nil
}

// Validate checks the namespace and key.
func (op GetOp) Validate(Index) error {
	if err := op.Namespace.Validate("namespace"); err != nil {
		return err
	}
	return ValidateItemKey(op.Key)
}

// Validate checks the namespace, key, value, vectors and TTL of a put.
func (op PutOp) Validate(index Index) error {
	if err := op.Namespace.Validate("namespace"); err != nil {
		return err
	}
	if op.Namespace[0] == "langgraph" {
		return Errorf(EINVALID, "namespace: the root label %q is reserved by LangGraph.", "langgraph")
	}
	if err := ValidateItemKey(op.Key); err != nil {
		return err
	}
	if op.Value == nil {
		if len(op.Vectors) != 0 || op.TTL != 0 {
			return Errorf(EINVALID, "A delete (value null) takes no vectors and no ttl.")
		}
		return nil
	}
	if err := validObject("value", op.Value); err != nil {
		return err
	}
	if len(op.Vectors) > MaxItemVectors {
		return Errorf(EINVALID, "vectors has %d vectors; the limit is %d.", len(op.Vectors), MaxItemVectors)
	}
	for i, v := range op.Vectors {
		if err := validVector(index, "vectors["+strconv.Itoa(i)+"]", v); err != nil {
			return err
		}
	}
	if op.TTL < 0 || op.TTL > MaxItemTTL {
		return Errorf(EINVALID, "ttl must not be negative (0: no TTL) and at most %s.", MaxItemTTL)
	}
	return nil
}

// Validate checks the prefix, filter, paging and query of a search, and
// parses its filter.
func (op *SearchOp) Validate(index Index) error {
	if err := op.Prefix.validLabels("namespace_prefix"); err != nil {
		return err
	}
	if err := validPage(op.Limit, op.Offset, MaxSearchLimit, MaxSearchOffset); err != nil {
		return err
	}
	if op.Query != nil {
		if err := validVector(index, "query", op.Query); err != nil {
			return err
		}
	}
	op.filter = nil
	if op.Filter != nil {
		f, err := ParseItemFilter(op.Filter)
		if err != nil {
			return err
		}
		op.filter = f
	}
	return nil
}

// Validate checks the conditions, depth and paging of a listing.
func (op ListNamespacesOp) Validate(Index) error {
	for i, c := range op.Conditions {
		if err := c.Validate("match_conditions[" + strconv.Itoa(i) + "]"); err != nil {
			return err
		}
	}
	if op.MaxDepth < 0 {
		return Errorf(EINVALID, "max_depth must not be negative (0: whole namespaces).")
	}
	return validPage(op.Limit, op.Offset, MaxListLimit, MaxSearchOffset)
}

func validPage(limit, offset, maxLimit, maxOffset int) error {
	switch {
	case limit < 0 || limit > maxLimit:
		return Errorf(EINVALID, "limit is %d; it must be between 0 and %d.", limit, maxLimit)
	case offset < 0 || offset > maxOffset:
		return Errorf(EINVALID, "offset is %d; it must be between 0 and %d.", offset, maxOffset)
	}
	return nil
}

func validVector(index Index, field string, v []float32) error {
	if index.Dims == 0 {
		return Errorf(EINVALID, "%s: the batch gives no dims, so it takes no vectors.", field)
	}
	if len(v) != index.Dims {
		return Errorf(EINVALID, "%s has %d dims; the index has %d.", field, len(v), index.Dims)
	}
	for _, x := range v {
		if x != x || x > maxFloat32 || x < -maxFloat32 {
			return Errorf(EINVALID, "%s holds a NaN or infinite number.", field)
		}
	}
	return nil
}

const maxFloat32 = 3.40282346638528859811704183484516925440e+38
