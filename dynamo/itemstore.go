package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/internal/awsx"
)

var _ saver.ItemStore = (*Store)(nil)

// The Store's items (LangGraph's BaseStore) are table items of their own,
// keyed as key.go describes (itemPartition, itemSortKey), with kind
// "store_item" and
//
//	namespace   the labels, a list of strings
//	key         the item's key
//	value       {type "json", data} inline, or {type, ref} offloaded
//	vectors     the embeddings, float32 little-endian end to end (B); dims
//	            the numbers per vector; absent when the put had none
//	created_at  Unix nanoseconds of the first put, kept by updates
//	updated_at  Unix nanoseconds of the last put
//	ttl_ns      the TTL in nanoseconds, absent for none
//	expires_ns  the expiry in Unix nanoseconds, which reads compare
//	expires_at  the expiry in epoch seconds rounded up: the table's TTL
//	            attribute, on which DynamoDB deletes the item at last
const (
	itemStored    = "store_item"
	attrNamespace = "namespace"
	attrItemKey   = "key"
	attrVectors   = "vectors"
	attrDims      = "dims"
	attrCreated   = "created_at"
	attrUpdated   = "updated_at"
	attrItemTTL   = "ttl_ns"
	attrExpiresNs = "expires_ns"
	itemValueType = "json"
)

// maxRefBytes bounds an offloaded reference as an item holds it, for the
// size an item will have once its value is offloaded.
const maxRefBytes = 2048

// maxItemPutRounds bounds the requests of one batch's puts: a put that meets an
// expired item it must replace (created_at anew) goes again as a replace,
// and back if a live item appears meanwhile.
const maxItemPutRounds = 4

// maxKeptLoads bounds the bytes of offloaded values a search keeps per
// shard, once a filter read them, for the answer: past it, a value kept is
// loaded again should it be returned.
const maxKeptLoads = 8 << 20

// itemAttrsButVectors are the attributes a search without a query reads:
// DynamoDB still reads an item's vectors (and bills them), but neither sends
// them nor has them decoded, ten times a typical value at 384 dims.
var itemAttrsButVectors = []string{attrPK, attrSK, attrNamespace, attrItemKey, attrValue, attrCreated, attrUpdated, attrItemTTL, attrExpiresNs}

// itemConcurrency bounds the shards queried, and the refreshes written, at
// once.
const itemConcurrency = 8

// Batch runs a batch of item ops: each read in op order (one GetItem per
// get, one Query per page of each shard a search or listing reads), then
// the TTL refreshes of what was read (one conditional UpdateItem each),
// then the puts, the last of each key, in as few write requests as
// DynamoDB's limits allow (awsx.Table.Transact: one UpdateItem or
// DeleteItem for a single put, one TransactWriteItems per 100 otherwise).
// Every put is built, and refused when too large, before any request.
func (s *Store) Batch(ctx context.Context, tenant string, ops []saver.ItemOp) ([]saver.ItemResult, error) {
	now := s.Now()
	puts, err := s.itemPuts(tenant, ops, now)
	if err != nil {
		return nil, err
	}
	results := make([]saver.ItemResult, len(ops))
	var refresh []*storedItem
	for i, op := range ops {
		switch op := op.(type) {
		case saver.GetOp:
			results[i].Item, err = s.getItem(ctx, tenant, op, now, &refresh)
		case *saver.SearchOp:
			results[i].Items, err = s.searchItems(ctx, tenant, op, now, &refresh)
		case saver.ListNamespacesOp:
			results[i].Namespaces, err = s.listNamespaces(ctx, tenant, op, now)
		}
		if err != nil {
			return nil, fmt.Errorf("dynamo: item batch: %w", err)
		}
	}
	put := make(map[string]bool, len(puts))
	for _, p := range puts {
		put[getS(p.item, attrSK)] = true
	}
	refresh = slices.DeleteFunc(refresh, func(it *storedItem) bool { return put[it.sk] })
	if err := s.refreshItems(ctx, refresh, now); err != nil {
		return nil, fmt.Errorf("dynamo: item batch: refresh: %w", err)
	}
	if err := s.writeItems(ctx, tenant, puts, now); err != nil {
		return nil, fmt.Errorf("dynamo: item batch: %w", err)
	}
	return results, nil
}

// itemPut is a put of a batch, built: the whole item as a PutItem would
// write it (created_at now), and whether its value goes to the offloader.
type itemPut struct {
	op      saver.PutOp
	shard   int
	item    item
	offload bool
}

// itemPuts builds the last put of each key, in the order of those last
// puts, and refuses an item DynamoDB could not hold even with its value
// offloaded.
func (s *Store) itemPuts(tenant string, ops []saver.ItemOp, now time.Time) ([]*itemPut, error) {
	last := map[string]int{}
	for i, op := range ops {
		if p, ok := op.(saver.PutOp); ok {
			last[itemSortKey(p.Namespace, p.Key)] = i
		}
	}
	var out []*itemPut
	for i, op := range ops {
		p, ok := op.(saver.PutOp)
		if !ok || last[itemSortKey(p.Namespace, p.Key)] != i {
			continue
		}
		shard := itemShard(p.Namespace)
		ip := &itemPut{op: p, shard: shard, item: item{
			attrPK: attrS(itemPartition(tenant, shard)),
			attrSK: attrS(itemSortKey(p.Namespace, p.Key)),
		}}
		out = append(out, ip)
		if p.Value == nil {
			continue
		}
		storedItemAttrs(ip.item, p, now)
		size := awsx.ItemSize(ip.item)
		if s.Offload != nil && size > s.OffloadThreshold {
			ip.offload = true
			size += maxRefBytes - len(p.Value)
		}
		if size > MaxItemBytes {
			return nil, saver.Errorf(saver.ETOOLARGE, "The item %q of %d bytes (vectors included) is over DynamoDB's limit of %d bytes.", p.Key, size, MaxItemBytes)
		}
	}
	return out, nil
}

// storedItemAttrs sets the attributes of a put's item, its value inline.
func storedItemAttrs(it item, p saver.PutOp, now time.Time) {
	labels := make([]types.AttributeValue, len(p.Namespace))
	for i, l := range p.Namespace {
		labels[i] = attrS(l)
	}
	it[attrKind] = attrS(itemStored)
	it[attrNamespace] = &types.AttributeValueMemberL{Value: labels}
	it[attrItemKey] = attrS(p.Key)
	it[attrValue] = payloadAttr(saver.Typed{Type: itemValueType, Data: p.Value})
	it[attrCreated] = attrN(now.UnixNano())
	it[attrUpdated] = attrN(now.UnixNano())
	if len(p.Vectors) > 0 {
		it[attrVectors] = &types.AttributeValueMemberB{Value: saver.EncodeVectors(p.Vectors)}
		it[attrDims] = attrN(int64(len(p.Vectors[0])))
	}
	if exp := saver.ItemExpiry(now, p.TTL); !exp.IsZero() {
		it[attrItemTTL] = attrN(int64(p.TTL))
		setItemExpiry(it, exp)
	}
}

// setItemExpiry sets both expiry attributes of an item.
func setItemExpiry(it item, exp time.Time) {
	it[attrExpiresNs] = attrN(exp.UnixNano())
	it[attrExpiresAt] = attrN(ceilSeconds(exp))
}

// writeItems offloads the values that go to the offloader (each object
// before the item that points at it) and writes the puts. A put is an
// update that keeps created_at when the stored item is live or absent; one
// that meets an expired item (DynamoDB deletes them only within days)
// replaces it whole, so that created_at starts anew.
func (s *Store) writeItems(ctx context.Context, tenant string, puts []*itemPut, now time.Time) error {
	for _, p := range puts {
		if !p.offload {
			continue
		}
		ref, err := s.Offload.Offload(ctx, tenant, itemOwner(p.shard), p.op.Value, 0)
		if err != nil {
			return err
		}
		p.item[attrValue] = refAttr(itemValueType, ref)
	}
	replace := make([]bool, len(puts))
	for range maxItemPutRounds {
		ops := make([]awsx.WriteOp, len(puts))
		for i, p := range puts {
			ops[i] = itemWriteOp(p, replace[i], now)
		}
		err := s.table.Transact(ctx, ops)
		var cf *awsx.CondFailed
		if !errors.As(err, &cf) {
			return err
		}
		for i := range cf.Items {
			replace[i] = !replace[i]
		}
	}
	return saver.Errorf(saver.EUNAVAILABLE, "Item puts kept meeting concurrent changes; try again.")
}

// itemWriteOp is the write of a put: a delete, an update that keeps a live
// item's created_at (conditioned on the stored item being live or absent),
// or a replace of an expired one (conditioned on its being expired still).
func itemWriteOp(p *itemPut, replace bool, now time.Time) awsx.WriteOp {
	k := item{attrPK: p.item[attrPK], attrSK: p.item[attrSK]}
	if p.op.Value == nil {
		return awsx.WriteOp{Item: k, Delete: true}
	}
	c := awsx.NewExpr("c")
	if replace {
		c.Text = c.Name(attrExpiresNs) + " <= " + c.Value(attrN(now.UnixNano()))
		return awsx.WriteOp{Item: p.item, Cond: c}
	}
	c.Text = "attribute_not_exists(" + c.Name(attrExpiresNs) + ") OR " + c.Name(attrExpiresNs) + " > " + c.Value(attrN(now.UnixNano()))
	u := awsx.NewExpr("u")
	var sets, removes []string
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for name := range p.item {
			if !yield(name) {
				return
			}
		}
	}) {
		switch name {
		case attrPK, attrSK:
		case attrCreated:
			n := u.Name(name)
			sets = append(sets, n+" = if_not_exists("+n+", "+u.Value(p.item[name])+")")
		default:
			sets = append(sets, u.Name(name)+" = "+u.Value(p.item[name]))
		}
	}
	for _, name := range []string{attrVectors, attrDims, attrItemTTL, attrExpiresNs, attrExpiresAt} {
		if _, ok := p.item[name]; !ok {
			removes = append(removes, u.Name(name))
		}
	}
	u.Text = "SET " + strings.Join(sets, ", ")
	if len(removes) > 0 {
		u.Text += " REMOVE " + strings.Join(removes, ", ")
	}
	return awsx.WriteOp{Item: k, Set: u, Cond: c}
}

// storedItem is an item as read, decoded but for its value.
type storedItem struct {
	pk, sk                        string
	ns                            saver.Namespace
	key                           string
	created, updated, ttl, expiry int64
	dims                          int
	vectors                       []byte
	value                         types.AttributeValue
	// loaded is the value a filter loaded from the offloader, kept for
	// the answer; nil when none was, or it is not kept.
	loaded []byte
}

func decodeStoredItem(it item) (*storedItem, error) {
	si := &storedItem{
		pk: getS(it, attrPK), sk: getS(it, attrSK), key: getS(it, attrItemKey),
		created: getN(it, attrCreated), updated: getN(it, attrUpdated),
		ttl: getN(it, attrItemTTL), expiry: getN(it, attrExpiresNs),
		dims: int(getN(it, attrDims)), value: it[attrValue],
	}
	l, _ := it[attrNamespace].(*types.AttributeValueMemberL)
	if l == nil || len(l.Value) == 0 {
		return nil, fmt.Errorf("store item %s has no namespace", si.sk)
	}
	for _, v := range l.Value {
		s, ok := v.(*types.AttributeValueMemberS)
		if !ok {
			return nil, fmt.Errorf("store item %s: a label is a %T", si.sk, v)
		}
		si.ns = append(si.ns, s.Value)
	}
	if b, ok := it[attrVectors].(*types.AttributeValueMemberB); ok {
		si.vectors = b.Value
		if si.dims <= 0 || len(b.Value)%(4*si.dims) != 0 {
			return nil, fmt.Errorf("store item %s: %d bytes of vectors of %d dims", si.sk, len(b.Value), si.dims)
		}
	}
	return si, nil
}

func (si *storedItem) expired(now time.Time) bool {
	return si.expiry != 0 && saver.ItemExpired(time.Unix(0, si.expiry), now)
}

// score is the similarity of the item with q: its best vector's.
func (si *storedItem) score(q *saver.Query) (float64, bool) {
	n := 0
	if si.dims > 0 {
		n = len(si.vectors) / (4 * si.dims)
	}
	return q.ScoreBytes(si.vectors, n)
}

// result returns the item as a result, its value deferred in l unless it
// was loaded already.
func (si *storedItem) result(l *loads) (*saver.Item, error) {
	it := &saver.Item{
		Namespace: si.ns, Key: si.key,
		CreatedAt: time.Unix(0, si.created).UTC(), UpdatedAt: time.Unix(0, si.updated).UTC(),
	}
	if si.loaded != nil {
		it.Value = si.loaded
		return it, nil
	}
	if err := l.value(si.value, &it.Value); err != nil {
		return nil, fmt.Errorf("store item %s: %w", si.sk, err)
	}
	return it, nil
}

// value decodes a payload attribute's data into dst, deferring offloaded
// data as payload does.
func (l *loads) value(av types.AttributeValue, dst *[]byte) error {
	var v saver.Typed
	n := len(l.dsts)
	if err := l.payload(av, &v); err != nil {
		return err
	}
	if len(l.dsts) > n {
		l.dsts[n] = dst
		return nil
	}
	*dst = v.Data
	return nil
}

// valueOf returns the item's value, loading it when offloaded (loaded
// true).
func (s *Store) valueOf(ctx context.Context, si *storedItem) (v []byte, loaded bool, err error) {
	var l loads
	it, err := si.result(&l)
	if err != nil {
		return nil, false, err
	}
	if err := s.fetch(ctx, &l); err != nil {
		return nil, false, err
	}
	return it.Value, len(l.refs) > 0, nil
}

// getItem reads one item: one GetItem (+ one S3 GetObject when its value is
// offloaded).
func (s *Store) getItem(ctx context.Context, tenant string, op saver.GetOp, now time.Time, refresh *[]*storedItem) (*saver.Item, error) {
	raw, err := s.table.Get(ctx, item{
		attrPK: attrS(itemPartition(tenant, itemShard(op.Namespace))),
		attrSK: attrS(itemSortKey(op.Namespace, op.Key)),
	})
	if err != nil || raw == nil {
		return nil, err
	}
	si, err := decodeStoredItem(raw)
	if err != nil || si.expired(now) {
		return nil, err
	}
	var l loads
	it, err := si.result(&l)
	if err != nil {
		return nil, err
	}
	if err := s.fetch(ctx, &l); err != nil {
		return nil, err
	}
	// The answer holds the value: charged to the response budget.
	if err := saver.Take(ctx, int64(len(it.Value))); err != nil {
		return nil, err
	}
	if op.RefreshTTL && si.ttl > 0 {
		*refresh = append(*refresh, si)
	}
	return it, nil
}

// queryItems calls fn with each item under prefix in one shard, in sort key
// order: one Query per 1 MB page, on that prefix alone.
func (s *Store) queryItems(ctx context.Context, tenant string, shard int, prefix saver.Namespace, projection []string, fn func(it item) error) error {
	in := &dynamodb.QueryInput{
		KeyConditionExpression: ptr("PK = :pk AND begins_with(SK, :p)"),
		ExpressionAttributeValues: item{
			":pk": attrS(itemPartition(tenant, shard)),
			":p":  attrS(itemNSPrefix(prefix)),
		},
	}
	project(&in.ProjectionExpression, &in.ExpressionAttributeNames, projection)
	var ferr error
	err := s.table.Query(ctx, in, func(items []item) bool {
		for _, it := range items {
			if ferr = fn(it); ferr != nil {
				return false
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	return ferr
}

// eachShard runs fn on each shard holding namespaces under prefix,
// itemConcurrency at a time.
func eachShard(ctx context.Context, prefix saver.Namespace, fn func(ctx context.Context, i, shard int) error) (int, error) {
	shards := itemShardsUnder(prefix)
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(itemConcurrency)
	for i, shard := range shards {
		g.Go(func() error { return fn(ctx, i, shard) })
	}
	return len(shards), g.Wait()
}

// listNamespaces walks the namespaces under the conditions' fixed prefix,
// in its shard or every shard, and returns the distinct namespaces of live
// items that match, truncated, in tuple order.
func (s *Store) listNamespaces(ctx context.Context, tenant string, op saver.ListNamespacesOp, now time.Time) ([]saver.Namespace, error) {
	want := op.Offset + op.Limit
	if op.Limit == 0 {
		return []saver.Namespace{}, nil
	}
	prefix := op.FixedPrefix()
	found := make([][]saver.Namespace, itemShards)
	_, err := eachShard(ctx, prefix, func(ctx context.Context, i, shard int) error {
		var err error
		found[i], err = s.listShard(ctx, tenant, shard, prefix, op, now, want)
		return err
	})
	if err != nil {
		return nil, err
	}
	// A namespace truncated to max_depth may be listed by several shards.
	out := slices.SortedFunc(slices.Values(slices.Concat(found...)), saver.Namespace.Compare)
	out = slices.CompactFunc(out, func(a, b saver.Namespace) bool { return a.Compare(b) == 0 })
	if op.Offset >= len(out) {
		return []saver.Namespace{}, nil
	}
	return out[op.Offset:min(len(out), want)], nil
}

// listShard walks one shard's namespaces under prefix in sort key order,
// which is tuple order, up to want of them: pages of items projected on
// their namespace and expiry (DynamoDB's 1 MB of items read per page), and
// past the first live item of a namespace a seek past the namespace's own
// items, or past everything under a namespace once it is listed truncated:
// within the page read, or by a Query starting there when the seek lands
// past it. A listing costs a request per namespace holding over a page of
// items, and one per page of namespaces of small ones.
// A seek key ends a namespace's prefix with '"', which no key holds: it
// sorts after the namespace's own items ("!") and before the namespaces
// under it (escaped labels start at '#').
func (s *Store) listShard(ctx context.Context, tenant string, shard int, prefix saver.Namespace, op saver.ListNamespacesOp, now time.Time, want int) ([]saver.Namespace, error) {
	pfx := itemNSPrefix(prefix)
	end := pfx[:len(pfx)-1] + `"` // past everything under prefix
	seek := pfx
	var out []saver.Namespace
	in := &dynamodb.QueryInput{}
	project(&in.ProjectionExpression, &in.ExpressionAttributeNames, []string{attrSK, attrNamespace, attrItemKey, attrExpiresNs})
	for len(out) < want && seek < end {
		in.KeyConditionExpression = ptr("PK = :pk AND SK BETWEEN :from AND :to")
		in.ExpressionAttributeValues = item{":pk": attrS(itemPartition(tenant, shard)), ":from": attrS(seek), ":to": attrS(end)}
		page, err := s.table.QueryPage(ctx, in)
		if err != nil {
			return nil, err
		}
		last := ""
		for _, raw := range page.Items {
			sk := getS(raw, attrSK)
			last = sk
			if sk < seek || len(out) == want {
				continue
			}
			si, err := decodeStoredItem(raw)
			if err != nil {
				return nil, err
			}
			if si.expired(now) {
				continue
			}
			own := itemNSPrefix(si.ns)
			past := own + `"`
			if op.Matches(si.ns) {
				t := si.ns.Truncate(op.MaxDepth)
				out = append(out, t)
				if len(t) < len(si.ns) || len(t) == op.MaxDepth {
					tk := itemNSPrefix(t)
					past = tk[:len(tk)-1] + `"`
				}
			}
			seek = max(seek, past)
		}
		switch {
		case len(page.LastEvaluatedKey) == 0:
			return out, nil // nothing past last
		case seek > last:
			in.ExclusiveStartKey = nil
		default:
			in.ExclusiveStartKey = page.LastEvaluatedKey
		}
	}
	return out, nil
}

// refreshItems restarts the TTL of the items read with a refresh asked for:
// one UpdateItem each, conditioned on the item being the one read and live
// still, so that a refresh never revives an item nor outlasts a put.
func (s *Store) refreshItems(ctx context.Context, items []*storedItem, now time.Time) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(itemConcurrency)
	for _, si := range items {
		g.Go(func() error {
			u, c := awsx.NewExpr("u"), awsx.NewExpr("c")
			exp := now.Add(time.Duration(si.ttl))
			u.Text = "SET " + u.Name(attrExpiresNs) + " = " + u.Value(attrN(exp.UnixNano())) + ", " +
				u.Name(attrExpiresAt) + " = " + u.Value(attrN(ceilSeconds(exp)))
			c.Text = c.Name(attrUpdated) + " = " + c.Value(attrN(si.updated)) + " AND " +
				c.Name(attrExpiresNs) + " > " + c.Value(attrN(now.UnixNano()))
			err := s.table.Transact(ctx, []awsx.WriteOp{{Item: item{attrPK: attrS(si.pk), attrSK: attrS(si.sk)}, Set: u, Cond: c}})
			var cf *awsx.CondFailed
			if errors.As(err, &cf) {
				return nil // put or expired since the read
			}
			return err
		})
	}
	return g.Wait()
}
