// Package apitest provides a saver.Store whose behaviour tests set per method,
// for the api package's tests and for profiling the API without a store.
package apitest

import (
	"context"
	"io"

	"github.com/saver-dev/saver"
)

var _ saver.Store = (*Store)(nil)

// Store calls the function field of each method; an unset field panics, so a
// test notices a call it did not expect.
type Store struct {
	PutCheckpointFn   func(ctx context.Context, in saver.PutCheckpoint) error
	PutWritesFn       func(ctx context.Context, in saver.PutWrites) error
	GetTupleFn        func(ctx context.Context, ref saver.CheckpointRef) (*saver.Tuple, error)
	DeltaHistoryFn    func(ctx context.Context, in saver.DeltaRequest) (map[string]*saver.DeltaHistory, error)
	ListCheckpointsFn func(ctx context.Context, f saver.ListFilter) ([]*saver.Tuple, error)
	DeleteThreadFn    func(ctx context.Context, tenant, threadID string) error
	DeleteForRunsFn   func(ctx context.Context, tenant string, runIDs []string) error
	CopyThreadFn      func(ctx context.Context, tenant, src, dst string) error
	PruneFn           func(ctx context.Context, tenant string, threadIDs []string, strategy saver.PruneStrategy) error

	ListNodesFn func(ctx context.Context, tenant, threadID string) ([]saver.Node, error)
	ClaimFn     func(ctx context.Context, in saver.ClaimRequest) (*saver.Claim, error)
	CompleteFn  func(ctx context.Context, tenant, key, token string, result saver.Typed) error
	FailFn      func(ctx context.Context, tenant, key, token string, failure saver.ClaimError) error
	SetExpiryFn func(ctx context.Context, ref saver.CheckpointRef, expiresAt int64) error
	BatchFn     func(ctx context.Context, tenant string, ops []saver.ItemOp) ([]saver.ItemResult, error)
	BackupFn    func(ctx context.Context, w io.Writer) error
}

func (s *Store) Backup(ctx context.Context, w io.Writer) error { return s.BackupFn(ctx, w) }

func (s *Store) PutCheckpoint(ctx context.Context, in saver.PutCheckpoint) error {
	return s.PutCheckpointFn(ctx, in)
}

func (s *Store) PutWrites(ctx context.Context, in saver.PutWrites) error {
	return s.PutWritesFn(ctx, in)
}

func (s *Store) GetTuple(ctx context.Context, ref saver.CheckpointRef) (*saver.Tuple, error) {
	return s.GetTupleFn(ctx, ref)
}

func (s *Store) DeltaHistory(ctx context.Context, in saver.DeltaRequest) (map[string]*saver.DeltaHistory, error) {
	return s.DeltaHistoryFn(ctx, in)
}

func (s *Store) ListCheckpoints(ctx context.Context, f saver.ListFilter) ([]*saver.Tuple, error) {
	return s.ListCheckpointsFn(ctx, f)
}

func (s *Store) DeleteThread(ctx context.Context, tenant, threadID string) error {
	return s.DeleteThreadFn(ctx, tenant, threadID)
}

func (s *Store) DeleteForRuns(ctx context.Context, tenant string, runIDs []string) error {
	return s.DeleteForRunsFn(ctx, tenant, runIDs)
}

func (s *Store) CopyThread(ctx context.Context, tenant, src, dst string) error {
	return s.CopyThreadFn(ctx, tenant, src, dst)
}

func (s *Store) Prune(ctx context.Context, tenant string, threadIDs []string, strategy saver.PruneStrategy) error {
	return s.PruneFn(ctx, tenant, threadIDs, strategy)
}

var (
	_ saver.TreeStore = (*Store)(nil)
	_ saver.Ledger    = (*Store)(nil)
	_ saver.Expirer   = (*Store)(nil)
	_ saver.ItemStore = (*Store)(nil)
)

func (s *Store) Batch(ctx context.Context, tenant string, ops []saver.ItemOp) ([]saver.ItemResult, error) {
	return s.BatchFn(ctx, tenant, ops)
}

func (s *Store) ListNodes(ctx context.Context, tenant, threadID string) ([]saver.Node, error) {
	return s.ListNodesFn(ctx, tenant, threadID)
}

func (s *Store) Claim(ctx context.Context, in saver.ClaimRequest) (*saver.Claim, error) {
	return s.ClaimFn(ctx, in)
}

func (s *Store) Complete(ctx context.Context, tenant, key, token string, result saver.Typed) error {
	return s.CompleteFn(ctx, tenant, key, token, result)
}

func (s *Store) Fail(ctx context.Context, tenant, key, token string, failure saver.ClaimError) error {
	return s.FailFn(ctx, tenant, key, token, failure)
}

func (s *Store) SetExpiry(ctx context.Context, ref saver.CheckpointRef, expiresAt int64) error {
	return s.SetExpiryFn(ctx, ref, expiresAt)
}
