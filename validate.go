package saver

import (
	"unicode/utf8"
)

// Limits on identifiers, in bytes. They keep every key well inside the
// DynamoDB sort-key limit (1,024 bytes) after escaping.
const (
	MaxIDBytes      = 256 // thread, checkpoint and task ids, channel names, versions
	MaxNSBytes      = 512 // checkpoint namespaces, which nest subgraph names
	MaxTaskPathSize = 1024
)

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

// ValidateThreadID checks a thread id: required, UTF-8, at most MaxIDBytes.
func ValidateThreadID(id string) error { return validID("thread_id", id, true, MaxIDBytes) }

// Validate checks a reference's fields; the checkpoint id may be empty.
func (r CheckpointRef) Validate() error {
	if err := ValidateThreadID(r.ThreadID); err != nil {
		return err
	}
	if err := validID("checkpoint_ns", r.NS, false, MaxNSBytes); err != nil {
		return err
	}
	return validID("checkpoint_id", r.ID, false, MaxIDBytes)
}

// Validate checks a put before it reaches a store.
func (in *PutCheckpoint) Validate() error {
	if err := in.CheckpointRef.Validate(); err != nil {
		return err
	}
	if in.ID == "" {
		return Errorf(EINVALID, "checkpoint_id is required.")
	}
	if err := validID("parent_checkpoint_id", in.ParentID, false, MaxIDBytes); err != nil {
		return err
	}
	if in.ExpectHead != nil {
		if err := validID("expected_head", *in.ExpectHead, false, MaxIDBytes); err != nil {
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
	return NormalizeMetadata(in.Metadata)
}

// Validate checks writes before they reach a store.
func (in *PutWrites) Validate() error {
	if err := in.CheckpointRef.Validate(); err != nil {
		return err
	}
	if in.ID == "" {
		return Errorf(EINVALID, "checkpoint_id is required.")
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
	if f.Limit < 0 {
		return Errorf(EINVALID, "limit must not be negative.")
	}
	if f.Metadata == nil {
		f.Metadata = Metadata{}
	}
	return NormalizeMetadata(f.Metadata)
}
