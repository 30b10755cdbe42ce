package dynamo

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/internal/awsx"
)

// CopyThread copies every live item of src to dst with BatchWriteItem, one
// Query page of src (1 MB) after the other, so that its memory is bounded
// whatever the thread's size. Pages come in sort-key order: blobs, then
// each checkpoint followed by its writes, oldest first in each namespace,
// then the namespaces' items. Of each page, the writes go before the
// checkpoints, and the page's last checkpoint waits for the next page,
// where its writes may go on: a reader of dst meanwhile sees blobs and
// writes no checkpoint shows yet, then an earlier state of the thread,
// never a checkpoint without its values, its writes or the ancestors its
// DeltaChannels need. The tree index (treeindex.go) is copied with the
// rest, its marker last, so a copy cut off part-way has its index made
// whole by its first tree query. A copy cut off part-way is made whole by running it
// again. Offloaded payloads are copied to dst's own objects first, so
// deleting src never takes dst's data with it. Nothing is written unless
// src has a live checkpoint.
func (s *Store) CopyThread(ctx context.Context, tenant, src, dst string) error {
	defer s.chains.dropThread(partitionKey(tenant, dst))
	if err := s.copyThread(ctx, tenant, src, dst); err != nil {
		return fmt.Errorf("dynamo: copy thread %s to %s: %w", src, dst, err)
	}
	return nil
}

func (s *Store) copyThread(ctx context.Context, tenant, src, dst string) error {
	in := &dynamodb.QueryInput{
		KeyConditionExpression:    ptr("PK = :pk"),
		ExpressionAttributeValues: item{":pk": attrS(partitionKey(tenant, src))},
	}
	c := &threadCopy{s: s, tenant: tenant, src: src, dst: dst, pk: attrS(partitionKey(tenant, dst))}
	for {
		out, err := s.table.QueryPage(ctx, in)
		if err != nil {
			return err
		}
		last := len(out.LastEvaluatedKey) == 0
		if err := c.page(ctx, out.Items, last); err != nil {
			return err
		}
		if last {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// threadCopy is a CopyThread under way.
type threadCopy struct {
	s                *Store
	tenant, src, dst string
	pk               types.AttributeValue // dst's partition key
	found            bool                 // src has a live checkpoint
	// held is the last checkpoint of the page before, whose writes may go
	// on in the next; pending are the puts left over from full requests.
	held    *types.WriteRequest
	pending []types.WriteRequest
	marker  *types.WriteRequest // src's tree index marker, copied last
}

// page copies a page of src's items: the writes (and blobs and namespace
// items), then the checkpoints, the one held from the page before first
// and this page's last held for the next, unless the page is the last.
// Puts go in full requests (fullRequest), the rest waits for the next
// page: a thread of small items takes as many requests as if it were read
// whole, 25 puts each.
func (c *threadCopy) page(ctx context.Context, items []item, last bool) error {
	if err := c.mustFind(ctx, items, last); err != nil {
		return err
	}
	writes, cps, err := c.puts(ctx, items)
	if err != nil {
		return err
	}
	c.queue(writes, cps, last)
	if last && c.marker != nil {
		if err := c.queueMarker(ctx); err != nil {
			return err
		}
	}
	if err := c.send(ctx, last); err != nil {
		return err
	}
	c.pending = slices.Clone(c.pending) // lets go of the page's puts
	return nil
}

// puts returns the puts in dst of the page's live items, the checkpoints
// apart from the rest (writes, blobs, namespace items), which go before
// them. src's tree index marker is set aside in c.marker: it goes last of
// the whole copy.
func (c *threadCopy) puts(ctx context.Context, items []item) (writes, cps []types.WriteRequest, err error) {
	for _, it := range items {
		if c.s.expired(getN(it, attrExpiresAt)) {
			continue
		}
		put, err := c.s.copyItem(ctx, it, c.tenant, c.dst, c.pk)
		if err != nil {
			return nil, nil, err
		}
		if isMarker(it) {
			c.marker = &put
			continue
		}
		if getS(it, attrKind) == itemCheckpoint {
			cps = append(cps, put)
		} else {
			writes = append(writes, put)
		}
	}
	return writes, cps, nil
}

// queue adds a page's puts to the pending ones in an order that keeps dst
// readable: the page's writes, then the checkpoint held from the page
// before once its writes are all in (a later checkpoint is on this page,
// or this page is the last), then the page's checkpoints but the last,
// held for the next page where its writes may go on. The last page holds
// nothing back.
func (c *threadCopy) queue(writes, cps []types.WriteRequest, last bool) {
	c.pending = append(c.pending, writes...)
	if c.held != nil && (len(cps) > 0 || last) {
		c.pending = append(c.pending, *c.held)
		c.held = nil
	}
	if len(cps) > 0 && !last {
		c.held = &cps[len(cps)-1]
		cps = cps[:len(cps)-1]
	}
	c.pending = append(c.pending, cps...)
}

// queueMarker adds src's tree index marker after everything else, if it
// is still the one copied (sameMarker).
func (c *threadCopy) queueMarker(ctx context.Context) error {
	same, err := c.sameMarker(ctx)
	if err != nil || !same {
		return err
	}
	c.pending = append(c.pending, *c.marker)
	return nil
}

// send writes the pending puts in full requests (fullRequest); those that
// do not fill one wait for the next page, unless this page is the last.
func (c *threadCopy) send(ctx context.Context, last bool) error {
	for len(c.pending) > 0 {
		n := fullRequest(c.pending)
		if n == 0 && !last {
			return nil
		}
		if n == 0 {
			n = len(c.pending)
		}
		if err := c.s.table.BatchWrite(ctx, c.pending[:n]); err != nil {
			return err
		}
		c.pending = c.pending[n:]
	}
	return nil
}

// maxCopyBytes is the size of items at which a request of CopyThread is
// full before its 25 puts: 25 large items would be 10 MB, which the SDK
// holds a few times over while it encodes them.
const maxCopyBytes = 1 << 20

// sameMarker reports whether src's marker is still the one copied: no pack
// or deletion changed its pages while the copy read them (treepage.go).
// Otherwise dst goes without a marker, and its first tree query makes its
// index whole from its checkpoints.
func (c *threadCopy) sameMarker(ctx context.Context) (bool, error) {
	m, err := c.s.table.Get(ctx, item{attrPK: attrS(partitionKey(c.tenant, c.src)), attrSK: attrS(indexMarkerKey)})
	if err != nil || m == nil {
		return false, err
	}
	return getN(m, attrPageVer) == getN(c.marker.PutRequest.Item, attrPageVer), nil
}

// fullRequest returns how many of puts, from the first, fill a request:
// awsx.MaxBatchWrite, or fewer that reach maxCopyBytes; 0 if they do not.
func fullRequest(puts []types.WriteRequest) int {
	size := 0
	for i, p := range puts {
		size += awsx.ItemSize(p.PutRequest.Item)
		if i+1 == awsx.MaxBatchWrite || size >= maxCopyBytes {
			return i + 1
		}
	}
	return 0
}

// mustFind returns ENOTFOUND unless src has a live checkpoint, before the
// copy writes anything: from the first page when it holds one, else with
// a Query of the checkpoints alone, projected on their kind and expiry.
func (c *threadCopy) mustFind(ctx context.Context, items []item, last bool) error {
	if c.found {
		return nil
	}
	c.found = slices.ContainsFunc(items, func(it item) bool {
		return getS(it, attrKind) == itemCheckpoint && !c.s.expired(getN(it, attrExpiresAt))
	})
	if !c.found && !last {
		in := &dynamodb.QueryInput{
			KeyConditionExpression: ptr("PK = :pk AND begins_with(SK, :c)"),
			ExpressionAttributeValues: item{
				":pk": attrS(partitionKey(c.tenant, c.src)),
				":c":  attrS(threadCheckpointsPrefix()),
			},
		}
		project(&in.ProjectionExpression, &in.ExpressionAttributeNames, []string{attrKind, attrExpiresAt})
		err := c.s.table.Query(ctx, in, func(items []item) bool {
			c.found = slices.ContainsFunc(items, func(it item) bool {
				return getS(it, attrKind) == itemCheckpoint && !c.s.expired(getN(it, attrExpiresAt))
			})
			return !c.found
		})
		if err != nil {
			return err
		}
	}
	if !c.found {
		return saver.ThreadNotFound(c.src)
	}
	return nil
}

// copyItem returns the put of it's copy in the partition pk of dst, its
// offloaded payloads copied to dst's own objects first. Copies expire with
// their originals.
func (s *Store) copyItem(ctx context.Context, it item, tenant, dst string, pk types.AttributeValue) (types.WriteRequest, error) {
	c := maps.Clone(it)
	c[attrPK] = pk
	if getS(it, attrKind) != itemIndex { // index items hold no thread id
		c[attrThread] = attrS(dst)
	}
	exp := getN(c, attrExpiresAt)
	for _, name := range []string{attrBody, attrValue} {
		m, ok := c[name].(*types.AttributeValueMemberM)
		if !ok || getS(m.Value, payloadRef) == "" {
			continue
		}
		if s.Offload == nil {
			return types.WriteRequest{}, fmt.Errorf("item points at offloaded data but the store has no offloader")
		}
		ref, err := s.Offload.Copy(ctx, getS(m.Value, payloadRef), tenant, dst, exp)
		if err != nil {
			return types.WriteRequest{}, err
		}
		c[name] = refAttr(getS(m.Value, payloadType), ref)
	}
	return types.WriteRequest{PutRequest: &types.PutRequest{Item: c}}, nil
}
