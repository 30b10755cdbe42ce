package bolt

import (
	"fmt"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/saver-dev/saver"
)

// checkpointRecord is the value stored under a checkpoint key: the
// checkpoint minus the fields its key holds.
type checkpointRecord struct {
	ParentID        string            `msgpack:"parent_id"`
	Body            saver.Typed       `msgpack:"body"`
	Metadata        map[string]any    `msgpack:"metadata"`
	ChannelVersions map[string]string `msgpack:"channel_versions"`
}

// writeRecord is the value stored under a write key: the write minus its
// task id and idx, which the key holds.
type writeRecord struct {
	TaskPath string      `msgpack:"task_path"`
	Channel  string      `msgpack:"channel"`
	Value    saver.Typed `msgpack:"value"`
}

func encodeCheckpoint(cp *saver.Checkpoint) ([]byte, error) {
	return msgpack.Marshal(&checkpointRecord{
		ParentID:        cp.ParentID,
		Body:            cp.Body,
		Metadata:        cp.Metadata,
		ChannelVersions: cp.ChannelVersions,
	})
}

// decodeCheckpoint decodes a checkpoint record into a checkpoint named by
// ref. Metadata is normalised: msgpack hands back the narrowest integer
// type, and the domain holds int64.
func decodeCheckpoint(ref saver.CheckpointRef, v []byte) (*saver.Checkpoint, error) {
	var rec checkpointRecord
	if err := msgpack.Unmarshal(v, &rec); err != nil {
		return nil, fmt.Errorf("decode checkpoint %s: %w", ref.ID, err)
	}
	md := saver.Metadata(rec.Metadata)
	if md == nil {
		md = saver.Metadata{}
	}
	if err := saver.NormalizeMetadata(md); err != nil {
		// Stored metadata was valid when put: this is corrupt data, not bad input.
		return nil, fmt.Errorf("decode checkpoint %s metadata: %s", ref.ID, saver.ErrorMessage(err))
	}
	return &saver.Checkpoint{
		CheckpointRef:   ref,
		ParentID:        rec.ParentID,
		Body:            rec.Body,
		Metadata:        md,
		ChannelVersions: rec.ChannelVersions,
	}, nil
}

func encodeWrite(w *saver.Write) ([]byte, error) {
	return msgpack.Marshal(&writeRecord{TaskPath: w.TaskPath, Channel: w.Channel, Value: w.Value})
}

func decodeWrite(taskID string, idx int64, v []byte) (saver.Write, error) {
	var rec writeRecord
	if err := msgpack.Unmarshal(v, &rec); err != nil {
		return saver.Write{}, fmt.Errorf("decode write (%s, %d): %w", taskID, idx, err)
	}
	return saver.Write{TaskID: taskID, TaskPath: rec.TaskPath, Idx: idx, Channel: rec.Channel, Value: rec.Value}, nil
}

func encodeTyped(t saver.Typed) ([]byte, error) { return msgpack.Marshal(&t) }

func decodeTyped(v []byte) (saver.Typed, error) {
	var t saver.Typed
	if err := msgpack.Unmarshal(v, &t); err != nil {
		return saver.Typed{}, fmt.Errorf("decode blob: %w", err)
	}
	return t, nil
}

// ledgerRecord is the value stored under a ledger key. Times are Unix
// nanoseconds.
type ledgerRecord struct {
	// State is ClaimClaimed while a holder works (its lease may have run
	// out), then ClaimCompleted or ClaimFailed. In_progress is never stored:
	// it is a claimed record seen by someone else before its lease ends.
	State          saver.ClaimState `msgpack:"state"`
	Token          string           `msgpack:"token"`
	Attempt        int              `msgpack:"attempt"`
	LeaseExpiresAt int64            `msgpack:"lease_expires_at"`
	// ExpiresAt is when the record is gone: TTL after its last change.
	ExpiresAt int64 `msgpack:"expires_at"`
	// TTL is the granted claim's, kept to push ExpiresAt on Complete and Fail.
	TTL    time.Duration `msgpack:"ttl"`
	Result *saver.Typed  `msgpack:"result,omitempty"`
	// Error is the failure of a failed record; on a claimed one, the last
	// retryable failure, which the grant reported.
	Error *saver.ClaimError `msgpack:"error,omitempty"`
}

func encodeLedger(rec *ledgerRecord) ([]byte, error) { return msgpack.Marshal(rec) }

func decodeLedger(v []byte) (*ledgerRecord, error) {
	var rec ledgerRecord
	if err := msgpack.Unmarshal(v, &rec); err != nil {
		return nil, fmt.Errorf("decode ledger record: %w", err)
	}
	return &rec, nil
}
