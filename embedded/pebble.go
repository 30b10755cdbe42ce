package embedded

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Pebble under the API. Buckets are key prefixes of one keyspace: a byte
// per bucket, then the bucket's key. A read transaction reads a snapshot; a
// write transaction is an indexed batch, which reads through its own
// writes, committed with a sync of the write-ahead log: one sync a commit
// (bbolt needs two), and the group commit gives many callers one.
//
// Pebble reports errors (I/O, a checksum that does not match) on Get and on
// iterators; a cursor has no error to return, so the transaction records
// the first one, and View and Update return it in place of fn's result (an
// Update then commits nothing).

// pebbleMemTable is the size of Pebble's memtables: what a flush writes at
// once, and part of what the space reserve must hold.
const pebbleMemTable = 4 << 20

// pebbleCache is the block cache's size: the hot part of the store's reads.
const pebbleCache = 32 << 20

// DefaultReserveBytes is Store.ReserveBytes's default: room for a few
// memtable flushes and the compactions after them.
const DefaultReserveBytes = 32 << 20

// pebblePrefixes gives each bucket its key prefix.
var pebblePrefixes = map[string]byte{
	string(bucketCheckpoints):  'c',
	string(bucketBlobs):        'b',
	string(bucketWrites):       'w',
	string(bucketTombstones):   'g',
	string(bucketLedger):       'l',
	string(bucketLedgerExpiry): 'e',
	string(bucketItems):        'i',
	string(bucketItemVectors):  'v',
	string(bucketItemExpiry):   'x',
	string(bucketNodes):        'n',
	string(bucketMeta):         'm',
}

type pebbleEngine struct {
	db  *pebble.DB
	dir string
	// reserve is the free space below which Update refuses to commit (see
	// roomFor).
	reserve uint64
	wal     *walEstimate
	logger  *slog.Logger
	// flushAsked is when askFlush last started a flush (Unix ns).
	flushAsked atomic.Int64
	// mu keeps Close from running under a transaction: pebble panics on a
	// snapshot or batch of a closed DB.
	mu     sync.RWMutex
	closed bool
}

func (e *pebbleEngine) Name() string { return "pebble" }

func (e *pebbleEngine) View(fn func(kvTx) error) error {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return errClosed
	}
	snap := e.db.NewSnapshot()
	t := &pebbleTx{r: snap}
	err := fn(t)
	t.end()
	if cerr := snap.Close(); t.err == nil {
		t.err = cerr
	}
	if t.err != nil {
		return t.err
	}
	return err
}

func (e *pebbleEngine) Update(fn func(kvTx) error) error {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return errClosed
	}
	b := e.db.NewIndexedBatch()
	defer b.Close()
	t := &pebbleTx{r: b, w: b}
	err := fn(t)
	t.end()
	if t.err != nil {
		return t.err
	}
	if err != nil {
		return err
	}
	if b.Empty() {
		return nil
	}
	if err := e.roomFor(uint64(b.Len()), !t.puts); err != nil {
		return err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return err
	}
	e.wal.committed(uint64(b.Len()))
	return nil
}

// roomFor fails with ENOSPC unless a commit of n bytes leaves the file
// system its reserve free once it is on disk. Pebble treats a failed write
// of its log as fatal (it cannot tell what of the commit reached the disk),
// so writes must stop before the disk is full; the reserve leaves room for
// the compactions that follow what was committed. A write refused here is
// answered 503, as bbolt's failed writes are.
//
// A commit costs the disk twice its size: its write to the log now, and
// its flush to a table later, while the log is still there. So do the
// commits before it that are in the log and not yet flushed (Pebble's
// "live" log bytes): each commit is charged what is still to come of those
// before it, so that concurrent large puts, which each find the free space
// that earlier ones have not used yet, cannot take the reserve between
// them.
//
// A commit of deletions only (deletion: no puts but tombstones) may go into the reserve,
// down to a quarter of it: deleting is how space is freed, and its
// tombstones are small, but a disk with nothing free refuses them too, as
// their log write would fail.
func (e *pebbleEngine) roomFor(n uint64, deletion bool) error {
	free, err := freeBytes(e.dir)
	if err != nil {
		return err
	}
	reserve := e.reserve
	if deletion {
		reserve /= 4
	}
	pending := e.wal.bytes(e.db)
	if free < reserve+pending+2*n {
		if pending > 0 && free >= e.reserve+2*n {
			e.askFlush() // only the log keeps the write out
		}
		return fmt.Errorf("%d bytes free, under the %d kept in reserve, %d to flush and %d to commit: %w",
			free, reserve, pending, 2*n, syscall.ENOSPC)
	}
	return nil
}

// askFlush starts a flush of the memtable, at most once a second. A store
// refused for the log bytes it has still to flush (roomFor) got them
// flushed only by more commits filling the memtable, and every put was
// refused: after its threads were deleted to free space it stayed not
// ready for good, its deletions' tombstones unflushed and the data they
// delete still on disk. roomFor asks only when the log alone keeps the
// write out, the whole reserve free beside the write: a flush takes space
// (its table, and a new log beside the old one, kept for reuse), which
// must not come out of what deletions may use, and Pebble cannot go on
// after a failed log write; and each flush starts a new log, even of an
// empty memtable. Its caller holds e.mu, so the DB is open.
func (e *pebbleEngine) askFlush() {
	now := time.Now().UnixNano()
	last := e.flushAsked.Load()
	if now-last < int64(time.Second) || !e.flushAsked.CompareAndSwap(last, now) {
		return
	}
	if _, err := e.db.AsyncFlush(); err != nil {
		e.logger.Error("flush to free the log's space", "engine", "pebble", "error", err)
	}
}

// freeBytes is the space left to unprivileged writers on dir's file system.
func freeBytes(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

func (e *pebbleEngine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil // as bbolt's Close: a second one is harmless
	}
	e.closed = true
	return e.db.Close()
}

// pebbleTx is a transaction: r reads (a snapshot or the batch), w writes
// (the batch; nil for a read transaction).
type pebbleTx struct {
	r     pebble.Reader
	w     *pebble.Batch
	iters []*pebble.Iterator
	err   error
	puts  bool // the batch holds a put, not deletions only (see roomFor)
}

func (t *pebbleTx) fail(err error) {
	if t.err == nil {
		t.err = err
	}
}

// end closes the transaction's iterators.
func (t *pebbleTx) end() {
	for _, it := range t.iters {
		if err := it.Close(); err != nil {
			t.fail(err)
		}
	}
	t.iters = nil
}

func (t *pebbleTx) Bucket(name []byte) kvBucket {
	p, ok := pebblePrefixes[string(name)]
	if !ok {
		return nil
	}
	return &pebbleBucket{t: t, prefix: p}
}

type pebbleBucket struct {
	t      *pebbleTx
	prefix byte
}

func (b *pebbleBucket) key(k []byte) []byte {
	out := make([]byte, 1+len(k))
	out[0] = b.prefix
	copy(out[1:], k)
	return out
}

func (b *pebbleBucket) Get(k []byte) []byte {
	v, closer, err := b.t.r.Get(b.key(k))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil
	}
	if err != nil {
		b.t.fail(err)
		return nil
	}
	out := bytes.Clone(v)
	if out == nil {
		out = []byte{}
	}
	closeQuietly(b.t, closer)
	return out
}

func closeQuietly(t *pebbleTx, c io.Closer) {
	if err := c.Close(); err != nil {
		t.fail(err)
	}
}

func (b *pebbleBucket) Put(k, v []byte) error {
	if b.t.w == nil {
		return errors.New("put in a read transaction")
	}
	// A tombstone is part of the deletion that lays it (tombstone.go): a
	// deletion freeing space on a full disk may lay its tombstones too.
	if b.prefix != pebblePrefixes[string(bucketTombstones)] {
		b.t.puts = true
	}
	return b.t.w.Set(b.key(k), v, nil)
}

func (b *pebbleBucket) Delete(k []byte) error {
	if b.t.w == nil {
		return errors.New("delete in a read transaction")
	}
	return b.t.w.Delete(b.key(k), nil)
}

func (b *pebbleBucket) Cursor() kvCursor {
	it, err := b.t.r.NewIter(&pebble.IterOptions{
		LowerBound: []byte{b.prefix},
		UpperBound: []byte{b.prefix + 1},
	})
	if err != nil {
		b.t.fail(err)
		return emptyCursor{}
	}
	b.t.iters = append(b.t.iters, it)
	return &pebbleCursor{t: b.t, it: it, prefix: b.prefix}
}

type pebbleCursor struct {
	t      *pebbleTx
	it     *pebble.Iterator
	prefix byte
}

// at returns the key (without its prefix) and value the iterator is on.
func (c *pebbleCursor) at(ok bool) ([]byte, []byte) {
	if !ok {
		if err := c.it.Error(); err != nil {
			c.t.fail(err)
		}
		return nil, nil
	}
	v, err := c.it.ValueAndErr()
	if err != nil {
		c.t.fail(err)
		return nil, nil
	}
	if v == nil {
		v = []byte{}
	}
	return c.it.Key()[1:], v
}

func (c *pebbleCursor) First() ([]byte, []byte) { return c.at(c.it.First()) }
func (c *pebbleCursor) Last() ([]byte, []byte)  { return c.at(c.it.Last()) }
func (c *pebbleCursor) Next() ([]byte, []byte)  { return c.at(c.it.Next()) }
func (c *pebbleCursor) Prev() ([]byte, []byte)  { return c.at(c.it.Prev()) }

func (c *pebbleCursor) Seek(seek []byte) ([]byte, []byte) {
	k := make([]byte, 1+len(seek))
	k[0] = c.prefix
	copy(k[1:], seek)
	return c.at(c.it.SeekGE(k))
}

// emptyCursor is a cursor over nothing, for an iterator that failed to open
// (the transaction has the error).
type emptyCursor struct{}

func (emptyCursor) First() ([]byte, []byte)      { return nil, nil }
func (emptyCursor) Last() ([]byte, []byte)       { return nil, nil }
func (emptyCursor) Seek([]byte) ([]byte, []byte) { return nil, nil }
func (emptyCursor) Next() ([]byte, []byte)       { return nil, nil }
func (emptyCursor) Prev() ([]byte, []byte)       { return nil, nil }

// openPebble opens the Pebble store in the directory at path, or creates
// one there (create: nothing is at path). A directory that holds no store
// is refused, as an empty file is (an interrupted creation, or another
// program's directory); a store another process holds is waited for up to
// Store.Timeout, as bbolt waits for its file lock.
func (s *Store) openPebble(path string, create bool) error {
	if create {
		// A store made on a disk without its reserve could take no write.
		if free, err := freeBytes(filepath.Dir(path)); err == nil && free < s.ReserveBytes {
			return fmt.Errorf("embedded: create %s: %d bytes free, under the %d a store keeps in reserve: %w",
				path, free, s.ReserveBytes, syscall.ENOSPC)
		}
		// The directory is claimed before Pebble makes it, so that a
		// failed creation removes only what this call made: another
		// process may have created the store since Open looked.
		if err := os.Mkdir(path, 0o750); errors.Is(err, fs.ErrExist) {
			return s.openPebble(path, false)
		} else if err != nil {
			return fmt.Errorf("embedded: create %s: %w", path, err)
		}
	} else {
		desc, err := pebble.Peek(path, vfs.Default)
		if err != nil {
			return fmt.Errorf("embedded: open %s: %w", path, err)
		}
		if !desc.Exists {
			return fmt.Errorf("embedded: open %s: %w: the directory holds no store (no Pebble manifest). saver creates a "+
				"store only where nothing is: restore the directory from a backup, or move it aside to start with "+
				"a new, empty store", path, ErrNotStore)
		}
	}
	opts := pebbleOptions(s.Logger, path, create)
	// Damage found in a table is remembered and reported (damage.go), and
	// the read or compaction that found it fails; Pebble's default is a
	// Fatalf, which took the process down (or, in a request, answered 500
	// with Pebble's state left inconsistent).
	wal := newWALEstimate()
	opts.AddEventListener(pebble.EventListener{
		FlushEnd:   func(pebble.FlushInfo) { wal.shrank() },
		WALDeleted: func(pebble.WALDeleteInfo) { wal.shrank() },
		DataCorruption: func(info pebble.DataCorruptionInfo) {
			s.noteDamage(fmt.Errorf("table %s: %w", filepath.Base(info.Path), pebble.ErrCorruption), "details", info.Details)
		},
		BackgroundError: func(err error) {
			if pebble.IsCorruptionError(err) {
				s.noteDamage(err)
				return
			}
			s.Logger.Error("background error", "engine", "pebble", "error", err)
		},
	})
	deadline := time.Now().Add(s.Timeout)
	for {
		db, err := pebble.Open(path, opts)
		if err == nil {
			s.db = &pebbleEngine{db: db, dir: path, reserve: s.ReserveBytes, wal: wal, logger: s.Logger}
			if err := removeBackupLeftovers(path); err != nil {
				s.Logger.Warn("cannot remove a backup's leftover checkpoint beside the store", "path", path, "error", err)
			}
			s.Logger.Info("store opened", "path", path, "engine", "pebble", "created", create)
			return nil
		}
		if create && !lockHeld(err) {
			os.RemoveAll(path) // no half-made store left behind; ours, claimed above
		}
		if !lockHeld(err) {
			if !create && (pebble.IsCorruptionError(err) || errors.Is(err, fs.ErrNotExist) ||
				strings.Contains(err.Error(), "malformed manifest")) {
				return fmt.Errorf("embedded: open %s: %w: %v. The directory is left as it is: restore it from a backup, "+
					"or move it aside to start with a new, empty store", path, ErrNotStore, err)
			}
			return fmt.Errorf("embedded: open %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("embedded: open %s: %w: %w", path, ErrLocked, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pebbleOptions are the options of every Pebble store this package opens or
// makes in dir (create: a new one, which must not exist yet), the
// migration's copy included.
func pebbleOptions(logger *slog.Logger, dir string, create bool) *pebble.Options {
	opts := &pebble.Options{
		ErrorIfExists:    create,
		ErrorIfNotExists: !create,
		Logger:           pebbleLogger{logger},
		MemTableSize:     pebbleMemTable,
		CacheSize:        pebbleCache,
		// Pebble preallocates a log 110 % of a memtable (DB.walPreallocateSize).
		FS: walFill{FS: vfs.Default, dir: filepath.Clean(dir), size: pebbleMemTable + pebbleMemTable/10},
	}
	// Blocks stay uncompressed: tree queries and listings read every
	// checkpoint record of a thread, and decompressing them cost more than
	// the disk they save (payloads are msgpack the client may compress).
	opts.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return pebble.DBCompressionNone })
	if create {
		opts.FormatMajorVersion = pebble.FormatNewest
	}
	return opts
}

// lockHeld reports whether Open failed on the store's lock file, which
// another process holds.
func lockHeld(err error) bool {
	return errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, syscall.EAGAIN) ||
		strings.Contains(err.Error(), "lock held by current process")
}

// pebbleLogger sends Pebble's messages to the store's logger: its routine
// information at debug level.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug(fmt.Sprintf(format, args...), "engine", "pebble")
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), "engine", "pebble")
}

func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error(msg, "engine", "pebble")
	panic(msg)
}
