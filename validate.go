package saver

import (
	"unicode/utf8"
)

// Limits on identifiers, in bytes.
const (
	MaxIDBytes      = 256 // thread, checkpoint and task ids, channel names, versions
	MaxNSBytes      = 512 // checkpoint namespaces, which nest subgraph names
	MaxTaskPathSize = 1024
	// MaxIDKeyBytes bounds a checkpoint id's KeyBytes. Stores keep checkpoint
	// ids whole in ordered keys, since their order is the listing order
	// (other ids and names may be hashed there); with this bound every
	// DynamoDB sort key stays within its 1,024 bytes (dynamo.TestKeyLengths).
	MaxIDKeyBytes = 512
)

// keyEscaped is the largest byte that an ordered store key writes as three
// bytes (dynamo/key.go escapes it and every byte below it as "#" and two hex
// digits, so that no id can hold a key's separator).
const keyEscaped = '#'

// KeyBytes is the length of s in an ordered store key: each byte from 0x00 to
// 0x23 (controls, space, !, ", #) takes three bytes, any other byte one.
func KeyBytes(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		if s[i] <= keyEscaped {
			n += 2
		}
	}
	return n
}

func validID(field, v string, required bool, max int) error {
	switch {
	case v == "" && required:
		return Errorf(EINVALID, "%s is required.", field)
	case len(v) > max:
		return Errorf(EINVALID, "%s is %d bytes long; the limit is %d.", field, len(v), max)
	case !utf8.ValidString(v):
		return Errorf(EINVALID, "%s is not valid UTF-8.", field)
	}
	return nil
}

// ValidateID checks an id of another kind (a run id, an idempotency key),
// named field in errors: required, UTF-8, at most MaxIDBytes.
func ValidateID(field, id string) error { return validID(field, id, true, MaxIDBytes) }

// ValidateThreadID checks a thread id: required, UTF-8, at most MaxIDBytes.
func ValidateThreadID(id string) error { return validID("thread_id", id, true, MaxIDBytes) }

// ValidateCheckpointID checks a checkpoint id, or anything compared with one
// (a parent, an expected head, a listing bound), named field in errors:
// UTF-8, at most MaxIDBytes, and at most MaxIDKeyBytes as a store key holds
// it. An empty id passes: whether one is required is the caller's rule.
func ValidateCheckpointID(field, id string) error {
	if err := validID(field, id, false, MaxIDBytes); err != nil {
		return err
	}
	if n := KeyBytes(id); n > MaxIDKeyBytes {
		return Errorf(EINVALID, "%s takes %d bytes in a store key (each control character, space, !, \" or # takes three); the limit is %d.", field, n, MaxIDKeyBytes)
	}
	return nil
}

// ValidateNS checks a checkpoint namespace: UTF-8, at most MaxNSBytes.
func ValidateNS(ns string) error { return validID("checkpoint_ns", ns, false, MaxNSBytes) }

// Validate checks a reference's fields; the checkpoint id may be empty.
func (r CheckpointRef) Validate() error {
	if err := ValidateThreadID(r.ThreadID); err != nil {
		return err
	}
	if err := ValidateNS(r.NS); err != nil {
		return err
	}
	return ValidateCheckpointID("checkpoint_id", r.ID)
}

// Validate checks a put before it reaches a store.
func (in *PutCheckpoint) Validate() error {
	if err := in.CheckpointRef.Validate(); err != nil {
		return err
	}
	if err := RequireCheckpointID(in.CheckpointRef); err != nil {
		return err
	}
	if err := ValidateCheckpointID("parent_checkpoint_id", in.ParentID); err != nil {
		return err
	}
	if in.ExpectHead != nil {
		if err := ValidateCheckpointID("expected_head", *in.ExpectHead); err != nil {
			return err
		}
	}
	if in.Body.Type == "" {
		return Errorf(EINVALID, "checkpoint.type is required.")
	}
	for ch, v := range in.ChannelVersions {
		if err := validID("channel name", ch, true, MaxIDBytes); err != nil {
			return err
		}
		if err := validID("version of channel "+ch, v, true, MaxIDBytes); err != nil {
			return err
		}
	}
	seen := make(map[[2]string]bool, len(in.Blobs))
	for _, b := range in.Blobs {
		if err := validID("blob channel", b.Channel, true, MaxIDBytes); err != nil {
			return err
		}
		if err := validID("version of blob "+b.Channel, b.Version, true, MaxIDBytes); err != nil {
			return err
		}
		if b.Value.Type == "" {
			return Errorf(EINVALID, "Blob %s has no value type.", b.Channel)
		}
		k := [2]string{b.Channel, b.Version}
		if seen[k] {
			return Errorf(EINVALID, "Blob %s at version %s is given twice.", b.Channel, b.Version)
		}
		seen[k] = true
	}
	if in.Metadata == nil {
		in.Metadata = Metadata{}
	}
	if err := NormalizeMetadata(in.Metadata); err != nil {
		return err
	}
	return MeasureMetadata(in.Metadata).Check("metadata")
}

// Validate checks writes before they reach a store.
func (in *PutWrites) Validate() error {
	if err := in.CheckpointRef.Validate(); err != nil {
		return err
	}
	if err := RequireCheckpointID(in.CheckpointRef); err != nil {
		return err
	}
	seen := make(map[string]map[int64]bool)
	for i, w := range in.Writes {
		if err := validID("task_id", w.TaskID, true, MaxIDBytes); err != nil {
			return err
		}
		if err := validID("task_path", w.TaskPath, false, MaxTaskPathSize); err != nil {
			return err
		}
		if err := validID("channel", w.Channel, true, MaxIDBytes); err != nil {
			return err
		}
		if w.Value.Type == "" {
			return Errorf(EINVALID, "Write %d has no value type.", i)
		}
		if want, special := SpecialChannelIdx[w.Channel]; special && w.Idx != want {
			return Errorf(EINVALID, "Write %d on %s must have idx %d, as LangGraph's WRITES_IDX_MAP says.", i, w.Channel, want)
		} else if !special && w.Idx < 0 {
			return Errorf(EINVALID, "Write %d has idx %d; negative idx is only for LangGraph's special channels.", i, w.Idx)
		}
		if seen[w.TaskID] == nil {
			seen[w.TaskID] = make(map[int64]bool)
		}
		if seen[w.TaskID][w.Idx] {
			return Errorf(EINVALID, "Write (task %s, idx %d) is given twice.", w.TaskID, w.Idx)
		}
		seen[w.TaskID][w.Idx] = true
	}
	return nil
}

// Validate checks a listing filter.
func (f *ListFilter) Validate() error {
	if f.ThreadID != "" {
		if err := ValidateThreadID(f.ThreadID); err != nil {
			return err
		}
	}
	if f.NS != nil {
		if err := ValidateNS(*f.NS); err != nil {
			return err
		}
	}
	if err := ValidateCheckpointID("checkpoint_id", f.CheckpointID); err != nil {
		return err
	}
	if err := ValidateCheckpointID("before", f.Before); err != nil {
		return err
	}
	if p := f.After; p != nil {
		// A cursor comes back from the client; its position is checked as
		// the ids it stands for would be.
		if err := validID("cursor thread_id", p.ThreadID, false, MaxIDBytes); err != nil {
			return err
		}
		if err := validID("cursor checkpoint_ns", p.NS, false, MaxNSBytes); err != nil {
			return err
		}
		if err := ValidateCheckpointID("cursor checkpoint_id", p.ID); err != nil {
			return err
		}
	}
	if f.Limit < 0 {
		return Errorf(EINVALID, "limit must not be negative.")
	}
	if f.Metadata == nil {
		f.Metadata = Metadata{}
	}
	if err := NormalizeMetadata(f.Metadata); err != nil {
		return err
	}
	return MeasureMetadata(f.Metadata).Check("filter")
}
