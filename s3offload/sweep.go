package s3offload

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Referrer tells which objects a thread's live items point at: items that
// expired do not count, whether or not DynamoDB has deleted them yet.
// dynamo.Store implements it (OffloadRefs); cmd/saver wires the two
// together.
type Referrer interface {
	OffloadRefs(ctx context.Context, tenant, threadID string) ([]string, error)
}

// Sweeper deletes objects that no live item points at: orphans of puts that
// crashed between the object and the item, payloads replaced by a re-put,
// and objects of items that expired, so that an object outlives its item by
// no more than the sweeper's period (and grace). Expired items are never
// brought back to life (a put or a pin finds them absent), so an object
// only expired items point at is garbage for good.
type Sweeper struct {
	store *Store
	refs  Referrer
}

// NewSweeper returns a sweeper of store's objects that asks refs which are live.
func NewSweeper(store *Store, refs Referrer) *Sweeper {
	return &Sweeper{store: store, refs: refs}
}

// SweepResult counts what a sweep saw and did.
type SweepResult struct {
	Objects int // objects listed
	Threads int // threads whose references were read
	Deleted int // orphans deleted
}

// Sweep deletes every object that is older than grace, whose key period
// closed more than grace ago, and that no item of its thread points at.
//
// grace must exceed the longest time a put takes from writing its object to
// writing its item (a request timeout or two). A put only references objects
// of the current period (see key.go), so once a period has closed and grace
// has passed, no put in flight can still come to point at its objects: the
// references read afterwards are final for them.
func (w *Sweeper) Sweep(ctx context.Context, grace time.Duration) (SweepResult, error) {
	var res SweepResult
	now := w.store.Now()
	type thread struct{ tenant, id string }
	candidates := map[thread][]string{}
	err := w.store.list(ctx, w.store.Prefix, func(o types.Object) {
		res.Objects++
		name, ok := w.store.parseKey(deref(o.Key))
		if !ok {
			return // not ours: a shared bucket
		}
		closed := name.period.Add(period)
		if now.Sub(closed) <= grace || (o.LastModified != nil && now.Sub(*o.LastModified) <= grace) {
			return
		}
		t := thread{name.tenant, name.threadID}
		candidates[t] = append(candidates[t], deref(o.Key))
	})
	if err != nil {
		return res, fmt.Errorf("s3offload: sweep: %w", err)
	}
	for t, keys := range candidates {
		res.Threads++
		live, err := w.refs.OffloadRefs(ctx, t.tenant, t.id)
		if err != nil {
			return res, fmt.Errorf("s3offload: sweep thread %s: %w", t.id, err)
		}
		used := make(map[string]bool, len(live))
		for _, r := range live {
			used[r] = true
		}
		var orphans []string
		for _, k := range keys {
			if !used[k] {
				orphans = append(orphans, k)
			}
		}
		if err := w.store.Delete(ctx, orphans); err != nil {
			return res, fmt.Errorf("s3offload: sweep thread %s: %w", t.id, err)
		}
		res.Deleted += len(orphans)
	}
	return res, nil
}
