package embedded

import (
	"fmt"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/internal/metasize"
)

// checkpointRecord is the value stored under a checkpoint key: the
// checkpoint minus the fields its key holds.
//
// ExpiresAt comes first and is always written, so that reads find it in
// the record's first bytes (recordExpiry). Records written before expiry
// existed lack it and Scope, and read as never expiring.
type checkpointRecord struct {
	ExpiresAt       int64             `msgpack:"expires_at"`
	Scope           saver.Scope       `msgpack:"scope,omitempty"`
	ParentID        string            `msgpack:"parent_id"`
	Body            saver.Typed       `msgpack:"body"`
	Metadata        map[string]any    `msgpack:"metadata"`
	ChannelVersions map[string]string `msgpack:"channel_versions"`
}

// writeRecord is the value stored under a write key: the write minus its
// task id and idx, which the key holds, plus its expiry (first, as in
// checkpointRecord; absent in older records: never).
type writeRecord struct {
	ExpiresAt int64       `msgpack:"expires_at"`
	TaskPath  string      `msgpack:"task_path"`
	Channel   string      `msgpack:"channel"`
	Value     saver.Typed `msgpack:"value"`
}

// blobRecord is the value stored under a blob key: the channel value and
// its expiry. Older records are a bare saver.Typed, whose two fields are
// the same as these: they read as never expiring.
type blobRecord struct {
	ExpiresAt int64  `msgpack:"expires_at"`
	Type      string `msgpack:"type"`
	Data      []byte `msgpack:"data"`
}

func encodeCheckpoint(cp *saver.Checkpoint) ([]byte, error) {
	return msgpack.Marshal(&checkpointRecord{
		ExpiresAt:       cp.ExpiresAt,
		Scope:           cp.Scope,
		ParentID:        cp.ParentID,
		Body:            cp.Body,
		Metadata:        cp.Metadata,
		ChannelVersions: cp.ChannelVersions,
	})
}

// storedCheckpoint is a checkpointRecord as a read decodes it: its
// metadata is measured before it is decoded.
type storedCheckpoint struct {
	ExpiresAt       int64              `msgpack:"expires_at"`
	Scope           saver.Scope        `msgpack:"scope,omitempty"`
	ParentID        string             `msgpack:"parent_id"`
	Body            saver.Typed        `msgpack:"body"`
	Metadata        msgpack.RawMessage `msgpack:"metadata"`
	ChannelVersions map[string]string  `msgpack:"channel_versions"`
}

// decodeCheckpoint decodes a checkpoint record into a checkpoint named by
// ref. Metadata past the limits a put enforces, stored before them, is
// refused (saver.StoredMetadataTooLarge) before it is decoded. Metadata is
// normalised: msgpack hands back the narrowest integer type, and the
// domain holds int64.
func decodeCheckpoint(ref saver.CheckpointRef, v []byte) (*saver.Checkpoint, error) {
	var rec storedCheckpoint
	if err := msgpack.Unmarshal(v, &rec); err != nil {
		return nil, fmt.Errorf("decode checkpoint %s: %w", ref.ID, err)
	}
	var md saver.Metadata
	if len(rec.Metadata) > 0 {
		z, err := metasize.Measure(rec.Metadata)
		if err != nil {
			return nil, fmt.Errorf("decode checkpoint %s metadata: %w", ref.ID, err)
		}
		if z.Over() {
			return nil, saver.StoredMetadataTooLarge(ref, z)
		}
		if err := msgpack.Unmarshal(rec.Metadata, (*map[string]any)(&md)); err != nil {
			return nil, fmt.Errorf("decode checkpoint %s metadata: %w", ref.ID, err)
		}
	}
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
		Scope:           rec.Scope,
		ExpiresAt:       rec.ExpiresAt,
	}, nil
}

func encodeWrite(w *saver.Write, expiresAt int64) ([]byte, error) {
	return msgpack.Marshal(&writeRecord{ExpiresAt: expiresAt, TaskPath: w.TaskPath, Channel: w.Channel, Value: w.Value})
}

// decodeWrite decodes a write record and returns the write with its expiry.
func decodeWrite(taskID string, idx int64, v []byte) (saver.Write, int64, error) {
	var rec writeRecord
	if err := msgpack.Unmarshal(v, &rec); err != nil {
		return saver.Write{}, 0, fmt.Errorf("decode write (%s, %d): %w", taskID, idx, err)
	}
	return saver.Write{TaskID: taskID, TaskPath: rec.TaskPath, Idx: idx, Channel: rec.Channel, Value: rec.Value}, rec.ExpiresAt, nil
}

func encodeBlob(value saver.Typed, expiresAt int64) ([]byte, error) {
	return msgpack.Marshal(&blobRecord{ExpiresAt: expiresAt, Type: value.Type, Data: value.Data})
}

// decodeBlob decodes a blob record and returns the value with its expiry.
func decodeBlob(v []byte) (saver.Typed, int64, error) {
	var rec blobRecord
	if err := msgpack.Unmarshal(v, &rec); err != nil {
		return saver.Typed{}, 0, fmt.Errorf("decode blob: %w", err)
	}
	return saver.Typed{Type: rec.Type, Data: rec.Data}, rec.ExpiresAt, nil
}

// ledgerRecord is the value stored under a ledger key. Times are Unix
// nanoseconds.
type ledgerRecord struct {
	// State is ClaimClaimed while a holder works (its lease may have run
	// out), then ClaimCompleted or ClaimFailed. In_progress is never stored:
	// it is a claimed record seen by someone else before its lease ends.
	State          saver.ClaimState `msgpack:"state"`
	Token          string           `msgpack:"token"`
	ClaimID        string           `msgpack:"claim_id,omitempty"` // the granted claim's, to know its resends
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
