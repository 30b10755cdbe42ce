package dynamo

import (
	"context"
	"errors"
	"fmt"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/internal/awsx"
)

// maxPutRounds bounds the requests of one put or SetExpiry. Each round
// settles the items whose conditions failed; another round follows only
// when other writers changed the same items in between.
const maxPutRounds = 6

// A revisable write conditions on stored items and, when some of them
// refute it, learns from them (DynamoDB returns each item a condition
// failed on, as stored) and goes again.
type revisable interface {
	// next returns the ops of the next request, having done first what
	// must come before it (reads, retags).
	next(ctx context.Context) ([]awsx.WriteOp, error)
	// revise takes the items the last request's ops failed on, by index.
	revise(ctx context.Context, failed map[int]item) error
}

// send writes w until a request passes, revising it from the items each
// failed on, and gives up with EUNAVAILABLE (gaveUp) after maxPutRounds.
func (s *Store) send(ctx context.Context, w revisable, gaveUp string) error {
	for round := 1; ; round++ {
		ops, err := w.next(ctx)
		if err != nil {
			return err
		}
		err = s.table.Transact(ctx, ops)
		var cf *awsx.CondFailed
		if !errors.As(err, &cf) {
			return err
		}
		if round == maxPutRounds {
			return fmt.Errorf("%w: %w", saver.Errorf(saver.EUNAVAILABLE, "%s", gaveUp), err)
		}
		if err := w.revise(ctx, cf.Items); err != nil {
			return err
		}
	}
}
