package dynamo

import (
	"context"
	"fmt"
	"maps"
	"math"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/internal/awsx"
	"github.com/saver-dev/saver/internal/metasize"
)

// Attribute names. Items carry their fields as attributes rather than only in
// their keys, so reading never has to decode a key.
const (
	attrPK        = "PK"
	attrSK        = "SK"
	attrKind      = "kind"
	attrThread    = "thread_id"
	attrNS        = "checkpoint_ns"
	attrID        = "checkpoint_id"
	attrParent    = "parent_checkpoint_id"
	attrBody      = "checkpoint"
	attrMetadata  = "metadata"
	attrVersions  = "channel_versions"
	attrRunID     = "run_id"
	attrScope     = "scope"
	attrSource    = "source"
	attrStep      = "step"
	attrParents   = "parents"
	attrTaskID    = "task_id"
	attrTaskPath  = "task_path"
	attrIdx       = "idx"
	attrChannel   = "channel"
	attrVersion   = "version"
	attrValue     = "value"
	payloadType   = "type"
	payloadData   = "data"
	payloadRef    = "ref"
	attrExpiresAt = AttrExpiresAt
)

// AttrExpiresAt is the table's TTL attribute: epoch seconds, absent when the
// item never expires.
const AttrExpiresAt = "expires_at"

// Values of attrKind.
const (
	itemCheckpoint = "checkpoint"
	itemWrite      = "write"
	itemBlob       = "blob"
	itemLedger     = "ledger"
)

// MaxItemBytes is DynamoDB's item size limit (400 KiB, attribute names included).
const MaxItemBytes = 400 << 10

type item = awsx.Item

func attrS(s string) *types.AttributeValueMemberS { return &types.AttributeValueMemberS{Value: s} }
func attrN(n int64) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func getS(it item, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func getN(it item, name string) int64 {
	if v, ok := it[name].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}

// setMap sets the map attribute name of it to m; none when m is empty.
func setMap(it item, name string, m item) {
	if len(m) == 0 {
		delete(it, name)
		return
	}
	it[name] = &types.AttributeValueMemberM{Value: m}
}

// payloadAttr is a payload kept inline: {type, data}.
func payloadAttr(v saver.Typed) types.AttributeValue {
	data := v.Data
	if data == nil {
		data = []byte{} // the SDK would send a nil B as something else
	}
	return &types.AttributeValueMemberM{Value: item{
		payloadType: attrS(v.Type),
		payloadData: &types.AttributeValueMemberB{Value: data},
	}}
}

// refAttr is an offloaded payload: {type, ref}.
func refAttr(typ, ref string) types.AttributeValue {
	return &types.AttributeValueMemberM{Value: item{payloadType: attrS(typ), payloadRef: attrS(ref)}}
}

// offload replaces the payload attribute name of it with a reference when
// the item is larger than OffloadThreshold with it inline. Without an
// Offloader an item over DynamoDB's limit is refused here, before anything
// is written.
func (s *Store) offload(ctx context.Context, tenant, threadID string, it item, name string, v saver.Typed, exp int64) error {
	size := awsx.ItemSize(it)
	if s.Offload != nil && size > s.OffloadThreshold {
		ref, err := s.Offload.Offload(ctx, tenant, threadID, v.Data, exp)
		if err != nil {
			return err
		}
		it[name] = refAttr(v.Type, ref)
		size = awsx.ItemSize(it)
	}
	if size > MaxItemBytes {
		return saver.Errorf(saver.ETOOLARGE, "An item of %d bytes is over DynamoDB's limit of %d bytes.", size, MaxItemBytes)
	}
	return nil
}

// checkpointItem returns the item of a checkpoint.
func (s *Store) checkpointItem(ctx context.Context, cp *saver.Checkpoint, exp int64) (item, error) {
	md, err := msgpack.Marshal(map[string]any(cp.Metadata))
	if err != nil {
		return nil, fmt.Errorf("encode metadata: %w", err)
	}
	versions := make(item, len(cp.ChannelVersions))
	for ch, v := range cp.ChannelVersions {
		versions[ch] = attrS(v)
	}
	it := item{
		attrPK:       attrS(partitionKey(cp.Tenant, cp.ThreadID)),
		attrSK:       attrS(checkpointKey(cp.NS, cp.ID)),
		attrKind:     attrS(itemCheckpoint),
		attrThread:   attrS(cp.ThreadID),
		attrNS:       attrS(cp.NS),
		attrID:       attrS(cp.ID),
		attrParent:   attrS(cp.ParentID),
		attrBody:     payloadAttr(cp.Body),
		attrMetadata: &types.AttributeValueMemberB{Value: md},
		attrVersions: &types.AttributeValueMemberM{Value: versions},
	}
	if cp.Scope != "" {
		it[attrScope] = attrS(string(cp.Scope))
	}
	// run_id is kept apart so that delete_for_runs can filter on it, and
	// the node fields so that tree queries read them without the metadata.
	if run, ok := cp.Metadata["run_id"].(string); ok {
		it[attrRunID] = attrS(run)
	}
	if source, ok := cp.Metadata["source"].(string); ok {
		it[attrSource] = attrS(source)
	}
	if step, ok := nodeStep(cp.Metadata["step"]); ok {
		it[attrStep] = attrN(step)
	}
	if parents := nodeParents(cp.Metadata["parents"]); len(parents) > 0 {
		it[attrParents] = &types.AttributeValueMemberM{Value: parents}
	}
	if exp != 0 {
		it[attrExpiresAt] = attrN(exp)
	}
	if err := s.offload(ctx, cp.Tenant, cp.ThreadID, it, attrBody, cp.Body, exp); err != nil {
		return nil, err
	}
	return it, nil
}

// nodeStep returns a metadata step as an integer: a float is truncated
// toward zero; other types, and floats out of range, have none.
func nodeStep(v any) (int64, bool) {
	switch v := v.(type) {
	case int64:
		return v, true
	case float64:
		if v >= math.MinInt64 && v < math.MaxInt64 {
			return int64(v), true
		}
	}
	return 0, false
}

// nodeParents returns the string entries of a metadata parents map.
func nodeParents(v any) item {
	m, _ := v.(map[string]any)
	out := item{}
	for ns, id := range m {
		if id, ok := id.(string); ok {
			out[ns] = attrS(id)
		}
	}
	return out
}

// writeItem returns the item of a pending write against ref, its value
// inline: PutWrites offloads it once it knows the writes go one per item.
func writeItem(ref saver.CheckpointRef, w saver.Write, exp int64) item {
	it := threadItem(ref, writeKey(ref.NS, ref.ID, w.TaskID, w.Idx), itemWrite, exp)
	it[attrID] = attrS(ref.ID)
	it[attrTaskID] = attrS(w.TaskID)
	it[attrTaskPath] = attrS(w.TaskPath)
	it[attrIdx] = attrN(w.Idx)
	it[attrChannel] = attrS(w.Channel)
	it[attrValue] = payloadAttr(w.Value)
	return it
}

// blobItem returns the item of a channel value, offloaded if need be.
func (s *Store) blobItem(ctx context.Context, ref saver.CheckpointRef, b saver.Blob, exp int64) (item, error) {
	it := inlineBlobItem(ref, b, exp)
	if err := s.offload(ctx, ref.Tenant, ref.ThreadID, it, attrValue, b.Value, exp); err != nil {
		return nil, err
	}
	return it, nil
}

// inlineBlobItem returns the item of a channel value, the value inline.
func inlineBlobItem(ref saver.CheckpointRef, b saver.Blob, exp int64) item {
	it := threadItem(ref, blobKey(ref.NS, b.Channel, b.Version), itemBlob, exp)
	it[attrChannel] = attrS(b.Channel)
	it[attrVersion] = attrS(b.Version)
	it[attrValue] = payloadAttr(b.Value)
	return it
}

// threadItem returns the attributes every item of a thread's namespace
// has: its keys, kind, thread, namespace and expiry (none for 0).
func threadItem(ref saver.CheckpointRef, sk, kind string, exp int64) item {
	it := item{
		attrPK:     attrS(partitionKey(ref.Tenant, ref.ThreadID)),
		attrSK:     attrS(sk),
		attrKind:   attrS(kind),
		attrThread: attrS(ref.ThreadID),
		attrNS:     attrS(ref.NS),
	}
	if exp != 0 {
		it[attrExpiresAt] = attrN(exp)
	}
	return it
}

// loads collects the offloaded payloads met while decoding items, to fetch
// them all at once (concurrently) before the result is returned.
type loads struct {
	refs []string
	dsts []*[]byte
}

// payload decodes a payload attribute into dst, deferring offloaded data.
func (l *loads) payload(av types.AttributeValue, dst *saver.Typed) error {
	m, ok := av.(*types.AttributeValueMemberM)
	if !ok {
		return fmt.Errorf("payload is a %T, not a map", av)
	}
	dst.Type = getS(m.Value, payloadType)
	if ref := getS(m.Value, payloadRef); ref != "" {
		l.refs = append(l.refs, ref)
		l.dsts = append(l.dsts, &dst.Data)
		return nil
	}
	b, _ := m.Value[payloadData].(*types.AttributeValueMemberB)
	if b == nil {
		return fmt.Errorf("payload has neither data nor ref")
	}
	dst.Data = b.Value
	if dst.Data == nil {
		dst.Data = []byte{}
	}
	return nil
}

// loadConcurrency bounds the offloaded payloads fetched at once.
const loadConcurrency = 8

// fetch loads every deferred payload. A reference whose data is gone is
// corrupt data (objects are written before the items pointing at them), so
// it fails the read rather than returning a hole.
func (s *Store) fetch(ctx context.Context, l *loads) error {
	if len(l.refs) == 0 {
		return nil
	}
	if s.Offload == nil {
		return fmt.Errorf("item points at offloaded data %s but the store has no offloader", l.refs[0])
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		sem   = make(chan struct{}, loadConcurrency)
	)
	for i, ref := range l.refs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			data, err := s.Offload.Load(ctx, ref)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if first == nil {
					first = err
				}
				return
			}
			*l.dsts[i] = data
		}()
	}
	wg.Wait()
	return first
}

// decodeCheckpoint decodes a checkpoint item; the body may be deferred in l.
func decodeCheckpoint(tenant string, it item, l *loads) (*saver.Tuple, error) {
	tup := &saver.Tuple{Checkpoint: saver.Checkpoint{
		CheckpointRef: saver.CheckpointRef{
			Tenant:   tenant,
			ThreadID: getS(it, attrThread),
			NS:       getS(it, attrNS),
			ID:       getS(it, attrID),
		},
		ParentID:        getS(it, attrParent),
		ChannelVersions: map[string]string{},
		Scope:           saver.Scope(getS(it, attrScope)),
		ExpiresAt:       getN(it, attrExpiresAt),
	}}
	if err := l.payload(it[attrBody], &tup.Body); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", tup.ID, err)
	}
	maps.Copy(tup.ChannelVersions, stringMap(it[attrVersions]))
	md := map[string]any{}
	if b, ok := it[attrMetadata].(*types.AttributeValueMemberB); ok && len(b.Value) > 0 {
		z, err := metasize.Measure(b.Value)
		if err != nil {
			return nil, fmt.Errorf("checkpoint %s: measure metadata: %w", tup.ID, err)
		}
		if z.Over() { // stored before the limit: refused, not decoded
			return nil, saver.StoredMetadataTooLarge(tup.CheckpointRef, z)
		}
		if err := msgpack.Unmarshal(b.Value, &md); err != nil {
			return nil, fmt.Errorf("checkpoint %s: decode metadata: %w", tup.ID, err)
		}
	}
	tup.Metadata = saver.Metadata(md)
	if err := saver.NormalizeMetadata(tup.Metadata); err != nil {
		return nil, fmt.Errorf("checkpoint %s: metadata: %w", tup.ID, err)
	}
	return tup, nil
}

// decodeWrite decodes a write item; the value may be deferred in l.
func decodeWrite(it item, l *loads) (*saver.Write, error) {
	w := &saver.Write{
		TaskID:   getS(it, attrTaskID),
		TaskPath: getS(it, attrTaskPath),
		Idx:      getN(it, attrIdx),
		Channel:  getS(it, attrChannel),
	}
	if err := l.payload(it[attrValue], &w.Value); err != nil {
		return nil, fmt.Errorf("write %s/%d: %w", w.TaskID, w.Idx, err)
	}
	return w, nil
}

// decodeBlob decodes a blob item, or a patch's (see patched.go); the value
// may be deferred in l.
func decodeBlob(it item, l *loads) (*saver.Blob, error) {
	b := &saver.Blob{Channel: getS(it, attrChannel), Version: getS(it, attrVersion)}
	if err := l.payload(blobPayload(it), &b.Value); err != nil {
		return nil, fmt.Errorf("blob %s@%s: %w", b.Channel, b.Version, err)
	}
	return b, nil
}

// valueRef returns the offloaded reference of an item's value, "" if none.
func valueRef(it item) string {
	if m, ok := it[attrValue].(*types.AttributeValueMemberM); ok {
		return getS(m.Value, payloadRef)
	}
	return ""
}

// refs returns the offloaded references an item holds.
func refs(it item) []string {
	var out []string
	for _, name := range []string{attrBody, attrValue} {
		if m, ok := it[name].(*types.AttributeValueMemberM); ok {
			if ref := getS(m.Value, payloadRef); ref != "" {
				out = append(out, ref)
			}
		}
	}
	return out
}
