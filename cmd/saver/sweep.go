package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/saver-dev/saver/embedded"
	"github.com/saver-dev/saver/metrics"
	"github.com/saver-dev/saver/s3offload"
)

// every calls fn once a period until ctx ends, the first time one period
// after it is called.
func every(ctx context.Context, period time.Duration, fn func()) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// sweepEmbedded deletes expired checkpoints, blobs, writes and Store items from
// the embedded store every period until ctx ends. Reads already hide them;
// this only gives the space back.
func sweepEmbedded(ctx context.Context, st *embedded.Store, period time.Duration, logger *slog.Logger, mx *metrics.Metrics) {
	every(ctx, period, func() {
		n, err := st.Sweep(ctx)
		if err == nil {
			var items int
			items, err = st.SweepItems(ctx)
			n += items
		}
		if mx != nil {
			mx.ObserveSweep(n, err)
		}
		if err != nil && ctx.Err() == nil {
			logger.Error("sweep", "error", err)
		} else if err == nil {
			logger.Info("sweep", "expired_deleted", n)
		}
	})
}

// runSweeper removes orphaned offload objects every period until ctx ends.
func runSweeper(ctx context.Context, w *s3offload.Sweeper, period, grace time.Duration, logger *slog.Logger, mx *metrics.Metrics) {
	every(ctx, period, func() {
		r, err := w.Sweep(ctx, grace)
		if mx != nil {
			mx.ObserveSweep(r.Deleted, err)
		}
		if err != nil {
			logger.Error("sweep", "error", err)
			return
		}
		logger.Info("sweep", "objects", r.Objects, "threads", r.Threads, "deleted", r.Deleted)
	})
}
