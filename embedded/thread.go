package embedded

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/saver-dev/saver"
)

// threadBuckets hold the data of threads, all keyed (tenant, thread, ...).
var threadBuckets = [][]byte{bucketCheckpoints, bucketBlobs, bucketWrites, bucketNodes}

// maxDeleteBatch bounds the keys one write transaction deletes. bbolt has
// one writer at a time, and the group commit shares its transactions among
// every caller, so a deletion of a large thread or run goes in many short
// transactions: other tenants' puts wait for one batch at most, never for
// the whole deletion.
const maxDeleteBatch = 500

// DeleteThread removes every checkpoint, blob and write of the thread:
// its tree index first (tree queries stop showing it), then checkpoints,
// each tombstoned in the transaction that deletes it with its writes and
// index entries (see saver's tombstone.go), then the other writes, then
// blobs, maxDeleteBatch keys a transaction, so a crash part-way leaves at
// worst an older part of the thread, whole, that a second delete removes.
// Last, the checkpoints that raced the deletion go (buryStragglers).
func (s *Store) DeleteThread(ctx context.Context, tenant, threadID string) error {
	prefix := key(tenant, threadID)
	if err := s.deleteWhere(ctx, "delete thread", bucketNodes, prefix, nil); err != nil {
		return err
	}
	if err := s.buryWhere(ctx, "delete thread", prefix, nil); err != nil {
		return err
	}
	for _, name := range []([]byte){bucketWrites, bucketBlobs} {
		if err := s.deleteWhere(ctx, "delete thread", name, prefix, nil); err != nil {
			return err
		}
	}
	return s.buryStragglers(ctx, "delete thread", prefix, nil, nil)
}

// buryWhere deletes the checkpoints under prefix for which doomed says so
// (all of them when doomed is nil), with their writes, as deleteWhere
// does, and lays a tombstone for each in the transaction that deletes it.
func (s *Store) buryWhere(ctx context.Context, op string, prefix []byte, doomed func(tx kvTx, rest, v []byte) (bool, error)) error {
	stone, err := s.tombstone()
	if err != nil {
		return err
	}
	return s.deleteKeys(ctx, op, bucketCheckpoints, prefix, stone, doomed)
}

// deleteWhere deletes the keys under prefix of bucket for which doomed says
// so (all of them when doomed is nil), in transactions of up to
// maxDeleteBatch deletions, each resuming after the last key the previous
// one looked at. doomed gets the transaction, the key after prefix and the
// value.
func (s *Store) deleteWhere(ctx context.Context, op string, bucket, prefix []byte, doomed func(tx kvTx, rest, v []byte) (bool, error)) error {
	return s.deleteKeys(ctx, op, bucket, prefix, nil, doomed)
}

// deleteKeys is deleteWhere, and buryWhere when stone, a tombstone's
// record, is set.
func (s *Store) deleteKeys(ctx context.Context, op string, bucket, prefix, stone []byte, doomed func(tx kvTx, rest, v []byte) (bool, error)) error {
	for from := prefix; from != nil; {
		// fn may run twice (see update): it starts from from each time,
		// and the loop moves on only once its transaction committed.
		var next []byte
		err := s.update(ctx, op, func(tx kvTx) error {
			var err error
			next, err = deleteBatch(tx, bucket, prefix, from, stone, doomed)
			return err
		})
		if err != nil {
			return err
		}
		if stone != nil && s.buryHook != nil {
			s.buryHook()
		}
		from = next
	}
	return nil
}

// deleteBatch deletes up to maxDeleteBatch doomed keys under prefix from
// the key from on, and returns the key to resume at, nil when it reached
// the end of prefix. Keys are collected first: a bbolt cursor is not safe
// to move on after its bucket changed. With stone set, the keys are
// checkpoints': each gets stone as its tombstone, and its writes go too.
func deleteBatch(tx kvTx, bucket, prefix, from, stone []byte, doomed func(tx kvTx, rest, v []byte) (bool, error)) ([]byte, error) {
	b := tx.Bucket(bucket)
	var keys [][]byte
	c := b.Cursor()
	k, v := c.Seek(from)
	for ; k != nil && bytes.HasPrefix(k, prefix) && len(keys) < maxDeleteBatch; k, v = c.Next() {
		if doomed != nil {
			ok, err := doomed(tx, k[len(prefix):], v)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
		}
		keys = append(keys, bytes.Clone(k))
	}
	var next []byte
	if k != nil && bytes.HasPrefix(k, prefix) {
		next = bytes.Clone(k)
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return nil, err
		}
		if stone == nil {
			continue
		}
		if err := tx.Bucket(bucketTombstones).Put(k, stone); err != nil {
			return nil, err
		}
		// A checkpoint's key is the prefix of its writes' keys, and of its
		// index entries' (a straggler has them: it was put whole).
		if err := deletePrefix(tx.Bucket(bucketWrites), k); err != nil {
			return nil, err
		}
		if err := deletePrefix(tx.Bucket(bucketNodes), k); err != nil {
			return nil, err
		}
	}
	return next, nil
}

// deletePrefix deletes every key under prefix, in the caller's transaction.
func deletePrefix(b kvBucket, prefix []byte) error {
	var doomed [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		doomed = append(doomed, bytes.Clone(k))
	}
	for _, k := range doomed {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// runCheckpoint is a checkpoint DeleteForRuns removes.
type runCheckpoint struct {
	ref saver.CheckpointRef
	run string
}

// maxRunBatch bounds the checkpoints (with their writes) one transaction of
// DeleteForRuns deletes.
const maxRunBatch = 100

// DeleteForRuns removes the checkpoints whose metadata run_id is one of
// runIDs, and their writes. Blobs stay: other checkpoints may share them.
//
// Each checkpoint is tombstoned in the transaction that deletes it (see
// saver's tombstone.go), and the puts that raced the deletion go last
// (buryStragglers).
//
// There is no index by run id: it finds them by skimming the run id out of
// every checkpoint record of the tenant, in read transactions, which hold
// up no writer. It refuses (ECONFLICT, deleting nothing) when a checkpoint
// that stays needs one of them to rebuild a DeltaChannel. Then it deletes
// them maxRunBatch a transaction, each checked again for its run id: what
// a run put meanwhile under another id stays.
func (s *Store) DeleteForRuns(ctx context.Context, tenant string, runIDs []string) error {
	if len(runIDs) == 0 {
		return nil
	}
	runs := saver.NewRunSet(runIDs)
	doomed, err := s.findRuns(ctx, tenant, runs)
	if err != nil {
		return err
	}
	var present map[string]map[string]bool
	err = s.view(ctx, "delete for runs", func(tx kvTx) error {
		var err error
		present, err = checkRunChains(ctx, tx, doomed, s.Now())
		return err
	})
	if err != nil {
		return err
	}
	stone, err := s.tombstone()
	if err != nil {
		return err
	}
	for start := 0; start < len(doomed); start += maxRunBatch {
		batch := doomed[start:min(start+maxRunBatch, len(doomed))]
		err := s.update(ctx, "delete for runs", func(tx kvTx) error {
			for _, d := range batch {
				if err := deleteRunCheckpoint(tx, d, stone); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if s.buryHook != nil {
			s.buryHook()
		}
	}
	// The puts that raced the deletion, namespace by namespace.
	seen := map[string]bool{}
	for _, d := range doomed {
		prefix := key(d.ref.Tenant, d.ref.ThreadID, d.ref.NS)
		if seen[string(prefix)] {
			continue
		}
		seen[string(prefix)] = true
		if err := s.buryStragglers(ctx, "delete for runs", prefix, runs, present[string(prefix)]); err != nil {
			return err
		}
	}
	return nil
}

// deleteRunCheckpoint deletes the checkpoint d with its writes and index
// entries, and tombstones it, if it is there still of d's run: what a run
// put meanwhile under another id stays.
func deleteRunCheckpoint(tx kvTx, d runCheckpoint, stone []byte) error {
	cps := tx.Bucket(bucketCheckpoints)
	k := checkpointKey(d.ref)
	v := cps.Get(k)
	if v == nil {
		return nil
	}
	if run, ok, err := recordRunID(v); err != nil || !ok || run != d.run {
		return err
	}
	if err := cps.Delete(k); err != nil {
		return err
	}
	if err := tx.Bucket(bucketTombstones).Put(k, stone); err != nil {
		return err
	}
	// A checkpoint's key is the prefix of its writes' keys, and of its
	// index entries'.
	if err := deletePrefix(tx.Bucket(bucketWrites), k); err != nil {
		return err
	}
	return deletePrefix(tx.Bucket(bucketNodes), k)
}

// maxScanBatch bounds the records one read transaction of a long search
// skims, so that no read transaction stays open for long (bbolt cannot
// reuse the pages an open one sees).
const maxScanBatch = 10_000

// findRuns returns the tenant's checkpoints whose run id is in runs, from
// read transactions of maxScanBatch records each.
func (s *Store) findRuns(ctx context.Context, tenant string, runs map[string]bool) ([]runCheckpoint, error) {
	prefix := key(tenant)
	var out []runCheckpoint
	n := 0
	for from := prefix; from != nil; {
		err := s.view(ctx, "delete for runs", func(tx kvTx) error {
			c := tx.Bucket(bucketCheckpoints).Cursor()
			k, v := c.Seek(from)
			for i := 0; k != nil && bytes.HasPrefix(k, prefix) && i < maxScanBatch; k, v = c.Next() {
				if err := checkCtx(ctx, i); err != nil {
					return err
				}
				i++
				if n++; n == 1 && s.scanHook != nil {
					s.scanHook()
				}
				run, ok, err := recordRunID(v)
				if err != nil {
					return err
				}
				if !ok || !runs[run] {
					continue
				}
				parts, err := parseKey(k, 4)
				if err != nil {
					return err
				}
				out = append(out, runCheckpoint{saver.CheckpointRef{Tenant: parts[0], ThreadID: parts[1], NS: parts[2], ID: parts[3]}, run})
			}
			from = nil
			if k != nil && bytes.HasPrefix(k, prefix) {
				from = bytes.Clone(k)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkRunChains fails with ECONFLICT when deleting doomed would leave a
// checkpoint that stays without part of its Chain (see saver.Severs).
// It returns the ids of the live checkpoints with a parent in each of
// doomed's namespaces, by namespace key (tenant, thread, ns).
func checkRunChains(ctx context.Context, tx kvTx, doomed []runCheckpoint, now time.Time) (map[string]map[string]bool, error) {
	type nsKey struct{ thread, ns string }
	gone := map[nsKey]map[string]bool{}
	var order []nsKey
	for _, d := range doomed {
		k := nsKey{d.ref.ThreadID, d.ref.NS}
		if gone[k] == nil {
			gone[k] = map[string]bool{}
			order = append(order, k)
		}
		gone[k][d.ref.ID] = true
	}
	tenant := ""
	if len(doomed) > 0 {
		tenant = doomed[0].ref.Tenant
	}
	present := map[string]map[string]bool{}
	for _, k := range order {
		ref := saver.CheckpointRef{Tenant: tenant, ThreadID: k.thread, NS: k.ns}
		children, err := childLinks(ctx, tx, ref, now)
		if err != nil {
			return nil, err
		}
		if err := saver.Severs(k.thread, k.ns, gone[k], children, newChainReader(tx, ref, now).node); err != nil {
			return nil, err
		}
		ids := map[string]bool{}
		for _, cs := range children {
			for _, id := range cs {
				ids[id] = true
			}
		}
		present[string(key(tenant, k.thread, k.ns))] = ids
	}
	return present, nil
}

// childLinks returns, for every live checkpoint of ref's namespace, the ids
// of its live children, from the parent links alone.
func childLinks(ctx context.Context, tx kvTx, ref saver.CheckpointRef, now time.Time) (map[string][]string, error) {
	prefix := key(ref.Tenant, ref.ThreadID, ref.NS)
	out := map[string][]string{}
	err := scanPrefix(ctx, tx.Bucket(bucketCheckpoints), prefix, func(k, v []byte) error {
		var node saver.Node
		exp, err := decodeNode(&node, v)
		if err != nil {
			return err
		}
		if saver.Expired(exp, now) || node.ParentID == "" {
			return nil
		}
		parts, err := parseKey(k[len(prefix):], 1)
		if err != nil {
			return err
		}
		out[node.ParentID] = append(out[node.ParentID], parts[0])
		return nil
	})
	return out, err
}

// chainReader builds the saver.ChainNode of a namespace's checkpoints on
// demand, from their records and the blobs they reference.
type chainReader struct {
	tx    kvTx
	ref   saver.CheckpointRef
	now   time.Time
	nodes map[string]*saver.ChainNode
}

func newChainReader(tx kvTx, ref saver.CheckpointRef, now time.Time) *chainReader {
	return &chainReader{tx: tx, ref: ref, now: now, nodes: map[string]*saver.ChainNode{}}
}

// node returns the chain node of checkpoint id, nil when it is not stored
// or expired.
func (r *chainReader) node(id string) (*saver.ChainNode, error) {
	if n, ok := r.nodes[id]; ok {
		return n, nil
	}
	ref := r.ref
	ref.ID = id
	cp, err := findCheckpoint(r.tx.Bucket(bucketCheckpoints), ref, r.now)
	if cp == nil || err != nil {
		return nil, err
	}
	bb := r.tx.Bucket(bucketBlobs)
	n := &saver.ChainNode{ID: id, ParentID: cp.ParentID, Seeds: map[string]bool{}}
	for ch := range cp.ChannelVersions {
		v, err := liveValue(bb, cp, ch, r.now, nil)
		if err != nil {
			return nil, err
		}
		n.Seeds[ch] = v != nil
	}
	n.Needs = saver.ChainNeeds(cp.Metadata, cp.ChannelVersions, func(ch string) bool { return n.Seeds[ch] })
	r.nodes[id] = n
	return n, nil
}

// maxCopyBatch and maxCopyBytes bound the records one write transaction of
// CopyThread looks at and the bytes it copies. A commit of half a Pebble
// memtable or more is flushed to a table of its own, and a train of them
// stalls every writer on compactions (another tenant's put waited 2 s
// during a copy of 4 MiB batches, 0.2 s with 1 MiB).
const (
	maxCopyBatch = 500
	maxCopyBytes = 1 << 20
)

// CopyThread copies every live checkpoint, blob and write of src to dst.
// Values are copied byte for byte, expiries included, so the copy reads
// exactly what the source reads and expires with it, every checkpoint with
// its whole chain.
//
// It copies in transactions of maxCopyBatch records or maxCopyBytes at
// most, so that its memory is bounded whatever the thread's size and other
// tenants' writes wait for one batch at most: blobs first, then writes,
// then checkpoints in key order, oldest first. A reader of dst meanwhile
// sees blobs and writes no checkpoint shows yet, then an earlier state of
// the thread: checkpoints each with its values, its writes and the
// ancestors its chain needs. A copy cut off part-way is made whole by
// running it again.
func (s *Store) CopyThread(ctx context.Context, tenant, src, dst string) error {
	srcPrefix, dstPrefix := key(tenant, src), key(tenant, dst)
	found := false
	err := s.view(ctx, "copy thread", func(tx kvTx) error {
		now := s.Now()
		c := tx.Bucket(bucketCheckpoints).Cursor()
		for k, v := c.Seek(srcPrefix); k != nil && bytes.HasPrefix(k, srcPrefix) && !found; k, v = c.Next() {
			var err error
			if found, err = live(v, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !found {
		return saver.ThreadNotFound(src)
	}
	for _, name := range [][]byte{bucketBlobs, bucketWrites, bucketCheckpoints, bucketNodes} {
		for from := srcPrefix; from != nil; {
			// fn may run twice (see update): it starts from its own copy.
			start, next := from, []byte(nil)
			err := s.update(ctx, "copy thread", func(tx kvTx) error {
				var err error
				next, err = copyBatch(tx.Bucket(name), srcPrefix, dstPrefix, start, s.Now())
				return err
			})
			if err != nil {
				return err
			}
			from = next
		}
	}
	return nil
}

// copyBatch copies the live records under srcPrefix of b, from the key from
// on, to the same keys under dstPrefix, up to maxCopyBatch records looked
// at or maxCopyBytes copied, and returns the key to resume at, nil at the
// end of srcPrefix. Records are collected before they are written: a
// cursor must not move on after its bucket changed.
func copyBatch(b kvBucket, srcPrefix, dstPrefix, from []byte, now time.Time) ([]byte, error) {
	var ks, vs [][]byte
	n, size := 0, 0
	c := b.Cursor()
	k, v := c.Seek(from)
	for ; k != nil && bytes.HasPrefix(k, srcPrefix) && n < maxCopyBatch && size < maxCopyBytes; k, v = c.Next() {
		n++
		if ok, err := live(v, now); !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		ks = append(ks, append(bytes.Clone(dstPrefix), k[len(srcPrefix):]...))
		vs = append(vs, bytes.Clone(v))
		size += len(k) + len(v)
	}
	var next []byte
	if k != nil && bytes.HasPrefix(k, srcPrefix) {
		next = bytes.Clone(k)
	}
	for i := range ks {
		if err := b.Put(ks[i], vs[i]); err != nil {
			return nil, err
		}
	}
	return next, nil
}

// Prune deletes the threads (PruneDelete) or keeps only the latest live
// checkpoint of each namespace, the ancestors its DeltaChannels need (its
// saver.Chain), their writes and the blobs they reference
// (PruneKeepLatest).
func (s *Store) Prune(ctx context.Context, tenant string, threadIDs []string, strategy saver.PruneStrategy) error {
	if err := strategy.Validate(); err != nil {
		return err
	}
	for _, thread := range threadIDs {
		var err error
		if strategy == saver.PruneDelete {
			err = s.DeleteThread(ctx, tenant, thread)
		} else {
			err = s.keepLatest(ctx, saver.CheckpointRef{Tenant: tenant, ThreadID: thread})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// keepLatest prunes one thread to the latest live checkpoint of each
// namespace and its Chain. A read transaction decides what stays; the
// deletions then go maxDeleteBatch keys a transaction, and spare what the
// thread gained meanwhile: checkpoints newer than the latest it saw (the
// next steps of a run), the writes of every checkpoint still stored, and
// the blobs any checkpoint still stored references, which each blob batch
// reads again.
func (s *Store) keepLatest(ctx context.Context, thread saver.CheckpointRef) error {
	prefix := key(thread.Tenant, thread.ThreadID)
	var (
		latest map[string]string          // namespace -> latest live checkpoint id
		kept   map[string]map[string]bool // namespace -> ids kept
	)
	err := s.view(ctx, "prune", func(tx kvTx) error {
		var err error
		latest, kept, err = planKeepLatest(ctx, tx, thread, s.Now())
		return err
	})
	if err != nil {
		return err
	}
	nsID := func(rest []byte) (string, string, []byte, error) {
		ns, rest, err := nextComponent(rest)
		if err != nil {
			return "", "", nil, err
		}
		id, rest, err := nextComponent(rest)
		return ns, id, rest, err
	}
	// Checkpoints: those older than their namespace's latest and not kept;
	// in a namespace with no live checkpoint, the expired ones.
	err = s.deleteWhere(ctx, "prune", bucketCheckpoints, prefix, func(_ kvTx, rest, v []byte) (bool, error) {
		ns, id, _, err := nsID(rest)
		if err != nil {
			return false, err
		}
		if l, ok := latest[ns]; ok {
			return id < l && !kept[ns][id], nil
		}
		ok, err := live(v, s.Now())
		return !ok, err
	})
	if err != nil {
		return err
	}
	// Writes: those whose checkpoint is not stored, unless newer than the
	// latest (their checkpoint may be on its way).
	err = s.deleteWhere(ctx, "prune", bucketWrites, prefix, func(tx kvTx, rest, _ []byte) (bool, error) {
		ns, id, _, err := nsID(rest)
		if err != nil {
			return false, err
		}
		if l, ok := latest[ns]; ok && id > l {
			return false, nil
		}
		cp := tx.Bucket(bucketCheckpoints).Get(key(thread.Tenant, thread.ThreadID, ns, id))
		return cp == nil, nil
	})
	if err == nil {
		err = s.reconcileNodes(ctx, "prune", prefix)
	}
	if err != nil {
		return err
	}
	// Blobs: those no stored checkpoint references, read again per batch.
	for from := prefix; from != nil; {
		var next []byte
		err := s.update(ctx, "prune", func(tx kvTx) error {
			referenced, err := referencedBlobs(ctx, tx, thread)
			if err != nil {
				return err
			}
			next, err = deleteBatch(tx, bucketBlobs, prefix, from, nil, func(_ kvTx, rest, _ []byte) (bool, error) {
				return !referenced[string(rest)], nil
			})
			return err
		})
		if err != nil {
			return err
		}
		from = next
	}
	return nil
}

// planKeepLatest returns each namespace's latest live checkpoint and the
// ids keep_latest keeps there: the latest and its Chain.
func planKeepLatest(ctx context.Context, tx kvTx, thread saver.CheckpointRef, now time.Time) (map[string]string, map[string]map[string]bool, error) {
	prefix := key(thread.Tenant, thread.ThreadID)
	cps := tx.Bucket(bucketCheckpoints)
	nss, err := distinct(ctx, cps.Cursor(), prefix, 1)
	if err != nil {
		return nil, nil, err
	}
	latest := make(map[string]string, len(nss))
	kept := make(map[string]map[string]bool, len(nss))
	for _, ns := range nss {
		ref := thread
		ref.NS = ns[0]
		cp, err := findCheckpoint(cps, ref, now)
		if err != nil {
			return nil, nil, err
		}
		if cp == nil {
			continue
		}
		latest[ref.NS] = cp.ID
		kept[ref.NS] = map[string]bool{cp.ID: true}
		r := newChainReader(tx, ref, now)
		n, err := r.node(cp.ID)
		if err != nil {
			return nil, nil, err
		}
		chain, err := saver.Chain(n, r.node)
		if err != nil {
			return nil, nil, err
		}
		for _, id := range chain {
			kept[ref.NS][id] = true
		}
	}
	return latest, kept, nil
}

// referencedBlobs returns the blob keys (after the thread prefix) that the
// thread's stored checkpoints reference through their channel versions.
func referencedBlobs(ctx context.Context, tx kvTx, thread saver.CheckpointRef) (map[string]bool, error) {
	prefix := key(thread.Tenant, thread.ThreadID)
	out := map[string]bool{}
	err := scanPrefix(ctx, tx.Bucket(bucketCheckpoints), prefix, func(k, v []byte) error {
		parts, err := parseKey(k[len(prefix):], 2)
		if err != nil {
			return err
		}
		// Only the versions: the msgpack decoder steps over the metadata,
		// which may be past what a read decodes (stored before the limits)
		// and must not keep a prune from removing it.
		var rec struct {
			ChannelVersions map[string]string `msgpack:"channel_versions"`
		}
		if err := msgpack.Unmarshal(v, &rec); err != nil {
			return fmt.Errorf("decode checkpoint %s versions: %w", parts[1], err)
		}
		for ch, ver := range rec.ChannelVersions {
			out[string(key(parts[0], ch, ver))] = true
		}
		return nil
	})
	return out, err
}
