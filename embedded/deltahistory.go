package embedded

import (
	"context"
	"time"

	"github.com/saver-dev/saver"
)

// DeltaHistory walks the target's parent chain in one read transaction:
// per ancestor, a lookup of its record, a scan of its writes (which sort
// right after it) and a lookup of the blob of each channel still walking.
// It stops at in.MaxBytes or after in.Known, and charges what it reads to ctx's budget.
func (s *Store) DeltaHistory(ctx context.Context, in saver.DeltaRequest) (map[string]*saver.DeltaHistory, error) {
	walk := saver.NewDeltaWalk(in.Channels)
	walk.Limit(in.MaxBytes)
	walk.Known(in.Known)
	if walk.Done() {
		return walk.Result()
	}
	err := s.view(ctx, "delta history", func(tx kvTx) error {
		now := s.Now()
		cps, bb := tx.Bucket(bucketCheckpoints), tx.Bucket(bucketBlobs)
		cp, err := findCheckpoint(cps, in.CheckpointRef, now)
		for n := 0; cp != nil && err == nil && cp.ParentID != ""; n++ {
			if err := checkCtx(ctx, n); err != nil {
				return err
			}
			ref := cp.CheckpointRef
			ref.ID = cp.ParentID
			if cp, err = findCheckpoint(cps, ref, now); cp == nil || err != nil {
				break
			}
			var writes []saver.Write
			if writes, err = readWrites(ctx, tx, cp.CheckpointRef, now); err != nil {
				break
			}
			more := walk.Visit(cp.ID, writes, func(ch string) *saver.Typed {
				if err != nil {
					return nil
				}
				var v *saver.Typed
				v, err = liveValue(bb, cp, ch, now, func(n int64) error { return saver.Take(ctx, n) })
				return v
			})
			if !more {
				break
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return walk.Result()
}

// liveValue returns the checkpoint's value of channel: its blob at the
// checkpoint's version, unless absent, empty or expired. take, if not nil,
// is charged the blob's bytes before they are decoded.
func liveValue(bb kvBucket, cp *saver.Checkpoint, channel string, now time.Time, take func(n int64) error) (*saver.Typed, error) {
	ver, ok := cp.ChannelVersions[channel]
	if !ok {
		return nil, nil
	}
	v := bb.Get(blobKey(cp.CheckpointRef, channel, ver))
	if v == nil {
		return nil, nil
	}
	if take != nil {
		if err := take(int64(len(v))); err != nil {
			return nil, err
		}
	}
	val, exp, err := decodeBlob(v)
	if err != nil || val.Type == saver.EmptyType || saver.Expired(exp, now) {
		return nil, err
	}
	return &val, nil
}
