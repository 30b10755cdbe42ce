// Package embedded implements saver.Store, saver.TreeStore, saver.Expirer,
// saver.Ledger, saver.ItemStore and conditional puts (ExpectHead) in one
// local store, the default for a single node: a Pebble directory, or a
// bbolt file made before the store moved to Pebble. engine.go has the small
// key-value API both engines implement, pebble.go and bbolt.go the engines
// (bboltopen.go and bboltverify.go open and verify a bbolt file), and
// migrate.go moves a bbolt file to Pebble.
//
// # Durability
//
// Every write is one transaction committed with a sync before the call
// returns: on Pebble, one fdatasync of its write-ahead log; on bbolt, two
// (its pages, then its meta page). An acknowledged call survives a crash of
// the process or the machine. Writers go through a group commit
// (commit.go): a lone write commits at once, and writes arriving during a
// commit share the next transaction and its sync. A Pebble store keeps
// Store.ReserveBytes of its disk free, refusing writes that would take it
// (space.go), as Pebble cannot go on after a write of its log failed.
//
// # Opening
//
// Open creates a store only where nothing is; a create that fails removes
// what it made, so that no empty store is left. What is there must be a
// store: a directory that holds a Pebble store (Pebble checks its manifest
// and, as it reads them, the checksums of its files), or a bbolt file,
// which is created exclusively (O_EXCL) and verified before bbolt maps it
// (bboltverify.go), as bbolt faults or panics in its own goroutines on a file cut
// short or damaged; an empty file or directory is refused. A refused store
// is left as it is, and the error wraps ErrNotStore and says what to do.
//
// # Key layout
//
// The buckets below hold the data (on Pebble, key prefixes of one
// keyspace, a byte each). Keys are tuples of string components, each
// escaped (0x00 -> 0x01 0x01, 0x01 -> 0x01 0x02) and followed by a 0x00
// separator, so that byte order is tuple order and the key of a tuple prefix
// is a byte prefix of exactly the keys that extend it. No thread id,
// namespace, checkpoint id or ledger key can collide with another or reach
// into a neighbour's range, whatever bytes it holds. The tenant comes first
// in every key.
//
//	checkpoints    (tenant, thread, ns, checkpoint_id)               -> checkpoint record
//	blobs          (tenant, thread, ns, channel, version)            -> blob record
//	writes         (tenant, thread, ns, checkpoint_id, task_id, idx) -> write record
//	ledger         (tenant, key)                                     -> ledger record
//	ledger_expiry  expiry ++ (tenant, key)                           -> empty
//	nodes          (tenant, thread, ns, checkpoint_id)               -> node record
//	               (tenant, thread, ns, checkpoint_id, task_id, idx) -> expiry of an error or interrupt write
//	meta           name                                              -> fact about the store (the tree index is whole)
//
// and the Store's items three more, which itemrecord.go describes: items,
// item_vectors and item_expiry.
//
// idx is 8 bytes, big-endian with the sign bit flipped, so that writes of a
// task sort by idx as numbers; a ledger record's expiry (Unix nanoseconds)
// is encoded the same way, unescaped, at the front of its ledger_expiry key.
// The key of a checkpoint is also the prefix of its writes. Values are
// msgpack.
//
// The latest checkpoint of (tenant, thread, ns) is the last key of that
// prefix, found by one seek; a put with ExpectHead seeks it inside its write
// transaction, which runs alone (the group commit runs one transaction at a
// time, commit.go), so the head it compares is the head it writes on. Listings walk namespaces backwards
// from their end and merge them, newest first, stopping at the limit.
//
// # DeltaChannel histories and deletions
//
// DeltaHistory walks the parent chain in one read transaction, by point
// lookups: per ancestor its record, its writes (which sort right after
// it), and the blob of each channel still walking. Deletions that can be
// large (delete_thread, prune, delete_for_runs) go in transactions of a
// few hundred keys, after reads in read transactions, so that they never
// hold the one writer, which every tenant shares, for long (thread.go).
//
// # Tree nodes
//
// Tree queries read a per-thread index kept by every call that changes a
// checkpoint or an error or interrupt write, in the same transaction
// (treeindex.go): under each checkpoint's key, a node record of a few dozen
// bytes (its expiry, parent link, and the metadata source, step and
// parents); under each error (idx -1) or interrupt (idx -3) write's key, that
// write's expiry. A checkpoint's key prefixes its writes', so one scan of
// the thread's prefix meets each node just before its flags, and no
// checkpoint record, payload or write is read. Stores written before the
// index get it when Open finds no marker in the meta bucket, before they
// serve.
//
// # Expiry
//
// Checkpoint, blob and write records carry their expiry (epoch seconds, 0
// never) as their first field, and checkpoint records their scope; records
// written before expiry existed have neither and never expire. Every read
// filters with Store.Now: an expired item is absent, whether or not it is
// still in the file, and a put treats it as absent too. The expiry is
// skimmed from the record's first bytes, so passing over an expired
// checkpoint costs no decoding.
//
// A blob a put brings expires by the blob lifetime rule
// (saver.NewBlobExpiry), and the put applies saver.ExtendedBlobExpiry to
// each blob its channel versions reference, by point lookups in the put's
// transaction; a blob is rewritten only when it would expire before the
// checkpoint.
// SetExpiry does the same for the checkpoint's blobs and writes. Rewriting
// an expiry copies the record's other fields byte for byte (withExpiry).
// Sweep deletes expired items to give their space back.
//
// # Idempotency ledger
//
// The ledger has its own buckets, so thread operations never touch it. A
// claim that grants nothing is answered by a read; a grant decides again in
// one write transaction, and write transactions run one at a time, so one
// claim of a key wins.
// Leases and expiry use Store.Now. Expired records are never returned, and
// each grant deletes a few of them, oldest first, through the expiry index:
// the file does not grow with keys that are gone.
package embedded

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/saver-dev/saver"
)

var (
	bucketCheckpoints  = []byte("checkpoints")
	bucketBlobs        = []byte("blobs")
	bucketWrites       = []byte("writes")
	bucketLedger       = []byte("ledger")
	bucketLedgerExpiry = []byte("ledger_expiry")
)

// buckets are every bucket of the file, created by Open.
var buckets = append(slices.Clone(threadBuckets), bucketTombstones, bucketLedger, bucketLedgerExpiry, bucketItems, bucketItemVectors, bucketItemExpiry, bucketMeta)

// Store is a saver.Store in one Pebble directory (or an older bbolt file).
// Its exported fields are knobs read by Open; the Options below set them.
type Store struct {
	// Logger receives the store's lifecycle events. Default: slog.Default().
	Logger *slog.Logger
	// Timeout bounds how long Open waits for another process to release the
	// file. Default: 5s.
	Timeout time.Duration
	// MaxBatchSize caps the writes sharing one transaction and fsync (see
	// groupCommit). Default: 1000.
	MaxBatchSize int
	// FileMode is the mode of a newly created file. Default: 0600.
	FileMode os.FileMode
	// Now is the clock of ledger leases and key expiry, and of checkpoint,
	// blob and write expiry, read on every call. Default: time.Now.
	Now func() time.Time
	// Engine is the engine of a new store, EnginePebble (default) or
	// EngineBolt; an existing store opens on its own, whatever this says.
	Engine string
	// ReserveBytes is the free disk space a Pebble store keeps: writes are
	// refused (EUNAVAILABLE, the disk full) rather than take it (see
	// pebbleEngine.roomFor). Default: DefaultReserveBytes.
	ReserveBytes uint64
	// TombstoneLifetime is how long a deletion's tombstones refuse late
	// writes to what it deleted (see saver's tombstone.go). Default:
	// saver.DefaultTombstoneLifetime.
	TombstoneLifetime time.Duration
	// TreeCacheNodes is how many nodes of the threads read last the tree
	// cache keeps decoded (treecache.go), over all threads; negative keeps
	// none. Default: DefaultTreeCacheNodes.
	TreeCacheNodes int

	path   string
	db     engine
	writes *groupCommit
	trees  *treeCache
	full   atomic.Bool           // a write failed for want of space, and none has succeeded since (space.go)
	damage atomic.Pointer[error] // the first corruption a read met (damage.go)
	// stones is set while the store may hold a tombstone (tombstone.go):
	// at Open if it holds one, and before any deletion lays one.
	stones atomic.Bool
	// backingUp is set while a backup runs (backup.go): one at a time.
	backingUp atomic.Bool
	// scanHook, when set (by tests), runs inside DeleteForRuns's scan.
	scanHook func()
	// treeScanHook, when set (by tests), runs in ListNodes between its scan
	// of the tree index and keeping the scan in the tree cache.
	treeScanHook func()
	// buryHook, when set (by tests), runs after each transaction that
	// deletes and tombstones checkpoints has committed.
	buryHook func()
}

var _ saver.Store = (*Store)(nil)

// Option sets a knob of the Store before Open uses it.
type Option func(*Store)

// WithLogger sets Store.Logger.
func WithLogger(l *slog.Logger) Option { return func(s *Store) { s.Logger = l } }

// WithTimeout sets Store.Timeout.
func WithTimeout(d time.Duration) Option { return func(s *Store) { s.Timeout = d } }

// WithNow sets Store.Now.
func WithNow(now func() time.Time) Option { return func(s *Store) { s.Now = now } }

// WithEngine sets Store.Engine.
func WithEngine(name string) Option { return func(s *Store) { s.Engine = name } }

// WithTombstoneLifetime sets Store.TombstoneLifetime.
func WithTombstoneLifetime(d time.Duration) Option { return func(s *Store) { s.TombstoneLifetime = d } }

// WithTreeCache sets Store.TreeCacheNodes; 0 keeps none.
func WithTreeCache(nodes int) Option {
	return func(s *Store) {
		s.TreeCacheNodes = nodes
		if nodes == 0 {
			s.TreeCacheNodes = -1
		}
	}
}

// WithReserve sets Store.ReserveBytes.
func WithReserve(n uint64) Option { return func(s *Store) { s.ReserveBytes = n } }

// Engines Store.Engine names.
const (
	EnginePebble = "pebble"
	EngineBolt   = "bbolt"
)

// Open opens the store at path. Where nothing is, it creates a new store
// there (a directory of Store.Engine's, Pebble by default), and its parent
// directories. What is there must be a store: a directory of Pebble's, or
// a bbolt file, which keeps opening on bbolt (see Migrate); anything else,
// an empty, cut short or damaged file or a directory that holds no store,
// is refused with an error wrapping ErrNotStore, and left as it is.
func Open(path string, opts ...Option) (*Store, error) {
	s := &Store{path: path}
	for _, o := range opts {
		o(s)
	}
	s.Timeout = cmp.Or(s.Timeout, 5*time.Second)
	s.MaxBatchSize = cmp.Or(s.MaxBatchSize, 1000)
	s.FileMode = cmp.Or(s.FileMode, 0o600)
	if s.Now == nil {
		s.Now = time.Now
	}
	s.Engine = cmp.Or(s.Engine, EnginePebble)
	s.TombstoneLifetime = cmp.Or(s.TombstoneLifetime, saver.DefaultTombstoneLifetime)
	s.ReserveBytes = cmp.Or(s.ReserveBytes, DefaultReserveBytes)
	s.Logger = cmp.Or(s.Logger, slog.Default()).With(saver.LogKeyComponent, "embedded")
	if err := s.openEngine(path); err != nil {
		return nil, err
	}
	nodes := cmp.Or(s.TreeCacheNodes, DefaultTreeCacheNodes)
	s.trees = newTreeCache(max(nodes, 0))
	// Writes go through nodeWatch, which keeps the tree cache true.
	s.writes = &groupCommit{db: nodeWatch{engine: s.db, cache: s.trees}, max: s.MaxBatchSize}
	if err := s.findStones(); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("embedded: open %s: %w", path, err)
	}
	if err := s.indexTree(context.Background()); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("embedded: open %s: %w", path, err)
	}
	return s, nil
}

// openEngine opens the engine of what is at path, or creates Store.Engine's
// where nothing is.
func (s *Store) openEngine(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return fmt.Errorf("embedded: open %s: %w", path, err)
	}
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return s.openPebble(path, false)
	case errors.Is(err, fs.ErrNotExist) && s.Engine == EnginePebble:
		return s.openPebble(path, true)
	case errors.Is(err, fs.ErrNotExist) && s.Engine == EngineBolt, err == nil:
		return s.openBolt(path)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("embedded: open %s: unknown engine %q", path, s.Engine)
	default:
		return fmt.Errorf("embedded: open %s: %w", path, err)
	}
}

// Close closes the store (its Pebble directory or bbolt file). Calls in
// flight finish first.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("embedded: close %s: %w", s.path, err)
	}
	s.Logger.Info("store closed", "path", s.path)
	return nil
}

// Ping reports whether the store answers reads, and writes as far as disk
// space goes, for readiness checks. While the disk is full (space.go) it
// probes for space and returns EUNAVAILABLE until there is some; once a
// read met damage (damage.go) it returns EUNAVAILABLE for good.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.damaged(); err != nil {
		return err
	}
	if s.full.Load() {
		if err := s.db.HasRoom(); err != nil {
			return translate("ping", err)
		}
		s.roomIsBack()
	}
	return s.view(ctx, "ping", func(tx kvTx) error {
		for _, name := range buckets {
			if tx.Bucket(name) == nil {
				return fmt.Errorf("bucket %s is missing", name)
			}
		}
		return nil
	})
}

// view runs fn in a read transaction and translates its error.
func (s *Store) view(ctx context.Context, op string, fn func(tx kvTx) error) error {
	if err := ctx.Err(); err != nil {
		return translate(op, err)
	}
	err := s.db.View(fn)
	s.noteDamage(err)
	return translate(op, err)
}

// update runs fn in a shared write transaction and translates its error.
// The group commit may run fn more than once (when another write in its
// transaction fails), so fn must only touch the transaction.
func (s *Store) update(ctx context.Context, op string, fn func(tx kvTx) error) error {
	if err := ctx.Err(); err != nil {
		return translate(op, err)
	}
	err := s.writes.do(fn)
	s.noteWrite(err)
	s.noteDamage(err)
	return translate(op, err)
}

// translate gives err a code from the saver taxonomy, once, at the edge of
// the package. Application errors pass unchanged.
func translate(op string, err error) error {
	var e *saver.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &e):
		return err
	case errors.Is(err, bolterrors.ErrDatabaseNotOpen), errors.Is(err, errClosed):
		return saver.Errorf(saver.EUNAVAILABLE, "The store is closed.")
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return fmt.Errorf("embedded: %s: %w", op, errors.Join(saver.Errorf(saver.EUNAVAILABLE, "The request ended before the store answered."), err))
	case noSpace(err):
		return fmt.Errorf("embedded: %s: %w", op, errors.Join(saver.Errorf(saver.EUNAVAILABLE, "The store's disk is full: nothing was written; retry once space is freed."), err))
	}
	return fmt.Errorf("embedded: %s: %w", op, err)
}

// checkCtx is called inside long loops so that a cancelled request stops
// scanning.
func checkCtx(ctx context.Context, n int) error {
	if n%256 == 0 {
		return ctx.Err()
	}
	return nil
}
