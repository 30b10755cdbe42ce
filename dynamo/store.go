package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/internal/awsx"
)

// DynamoAPI is the part of the DynamoDB client the store uses: the table's
// requests (awsx.DB) and its setup. *dynamodb.Client implements it.
type DynamoAPI interface {
	awsx.DB
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// Offloader keeps payloads that are too large for an item somewhere else and
// hands back a reference to store in the item instead. s3offload.Store is the
// production one; cmd/saver wires it in. Which payloads go is the store's
// decision (OffloadThreshold), made with the item layout; references are
// opaque to this package, and offloaders must make Offload idempotent (the
// same data twice gives a usable reference both times) because puts are
// retried.
type Offloader interface {
	// Offload stores data for a thread and returns its reference.
	// expiresAt is the item's expiry in epoch seconds, 0 for none.
	Offload(ctx context.Context, tenant, threadID string, data []byte, expiresAt int64) (ref string, err error)
	// Load returns the data a reference points to.
	Load(ctx context.Context, ref string) ([]byte, error)
	// Copy makes a copy of ref's data for another thread and returns its reference.
	Copy(ctx context.Context, ref, tenant, threadID string, expiresAt int64) (string, error)
	// Delete removes the data of refs; missing data is not an error.
	Delete(ctx context.Context, refs []string) error
	// DeleteThread removes all the data stored for a thread.
	DeleteThread(ctx context.Context, tenant, threadID string) error
	// Retag records that ref's data must live until expiresAt at least (0:
	// never), when its item's expiry is extended. It never shortens what
	// the data was given: data may be shared by items of one thread.
	Retag(ctx context.Context, ref string, expiresAt int64) error
}

// Store is a saver.Store, saver.TreeStore, saver.Ledger and saver.Expirer
// that honours conditional puts, on one DynamoDB table. See the package doc for the item
// layout. Its methods are safe for concurrent use.
type Store struct {
	// Offload, when set, takes the payloads that would make an item larger
	// than OffloadThreshold bytes. Without it an item over DynamoDB's limit
	// fails with ETOOLARGE.
	Offload Offloader
	// OffloadThreshold is the item size in bytes above which a payload
	// goes to Offload. NewStore sets DefaultOffloadThreshold.
	OffloadThreshold int
	// Now is the clock of expiry (hiding expired items, extending blobs)
	// and of the idempotency ledger's leases and records.
	Now func() time.Time
	// FirstPage is the Limit of the first Query page when looking for the
	// latest checkpoint: large enough to hold a checkpoint and the writes
	// it usually has (none while its step runs, a few once tasks finish),
	// small enough not to read (and pay for) older checkpoints, whose
	// items make a latest read slower as a thread grows. A latest
	// checkpoint with more writes takes a second Query, unlimited.
	FirstPage int32
	// TombstoneLifetime is how long a deletion's tombstones refuse late
	// writes to what it deleted (see saver's tombstone.go, tombstone.go).
	// NewStore sets saver.DefaultTombstoneLifetime.
	TombstoneLifetime time.Duration
	// TreePackAt is the number of single tree index items at which a tree
	// query packs them into pages (treepage.go); 0 is DefaultTreePackAt.
	// Tests lower it so that every path goes through pages.
	TreePackAt int

	db     DynamoAPI
	table  *awsx.Table
	recent *recent     // the patch cache's (patched.go); nil: no patches
	chains *chainCache // what delta histories read (chaincache.go); nil: none
}

var _ saver.Store = (*Store)(nil)

// DefaultOffloadThreshold is the item size above which payloads are
// offloaded: 350 KB, a margin under DynamoDB's 400 KB item limit for the
// item's other fields.
const DefaultOffloadThreshold = 350 << 10

// NewStore returns a store on table, which must exist (see CreateTable).
func NewStore(db DynamoAPI, table string) *Store {
	return &Store{Now: time.Now, FirstPage: 8, TombstoneLifetime: saver.DefaultTombstoneLifetime, OffloadThreshold: DefaultOffloadThreshold, db: db, table: awsx.NewTable(db, table), recent: newRecent(DefaultRecentBytes), chains: newChainCache(DefaultChainCacheBytes)}
}

// Table returns the name of the store's table.
func (s *Store) Table() string { return s.table.Name }

// Ping checks that the table answers and is ready: the readiness probe.
func (s *Store) Ping(ctx context.Context) error {
	out, err := s.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &s.table.Name})
	if err != nil {
		return fmt.Errorf("dynamo: ping %s: %w", s.table.Name, awsx.DynamoError(err))
	}
	if st := out.Table.TableStatus; st != types.TableStatusActive && st != types.TableStatusUpdating {
		return fmt.Errorf("dynamo: ping %s: %w", s.table.Name, saver.Errorf(saver.EUNAVAILABLE, "Table %s is %s.", s.table.Name, st))
	}
	return nil
}

// expired reports whether an item's expiry has passed. DynamoDB deletes
// expired items only eventually (typically within days), so reads hide them.
func (s *Store) expired(expiresAt int64) bool { return saver.Expired(expiresAt, s.Now()) }
