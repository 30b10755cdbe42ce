package saver_test

import (
	"strings"
	"testing"

	"github.com/saver-dev/saver"
)

func TestKeyBytes(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
	}{
		{"", 0},
		{"1ef4f797-8335-6428-8001-8a1503f9b875", 36},
		{"a b", 5},
		{"!#$", 7},
		{"\x00\x23\x24", 7},
		{"é", 2},
	} {
		if got := saver.KeyBytes(tt.in); got != tt.want {
			t.Errorf("KeyBytes(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// TestCheckpointIDKeyLimit: a checkpoint id within MaxIDBytes could still
// build a DynamoDB sort key over 1,024 bytes (256 "!" escape to 768 bytes),
// which the store answered with a misleading 413. Every place that takes a
// checkpoint id refuses it up front, naming the field.
func TestCheckpointIDKeyLimit(t *testing.T) {
	long := strings.Repeat("!", saver.MaxIDBytes)             // 768 bytes as a key
	edge := strings.Repeat("!", saver.MaxIDKeyBytes/3) + "xx" // 512: the most allowed
	ns := strings.Repeat("!", 100)
	ref := func(id string) saver.CheckpointRef {
		return saver.CheckpointRef{Tenant: "t", ThreadID: "th", NS: ns, ID: id}
	}
	put := func(mod func(*saver.PutCheckpoint)) *saver.PutCheckpoint {
		in := &saver.PutCheckpoint{Checkpoint: saver.Checkpoint{CheckpointRef: ref("c"), Body: saver.Typed{Type: "msgpack"}}}
		mod(in)
		return in
	}
	tests := []struct {
		name  string
		err   error
		field string
	}{
		{"Ref", ref(long).Validate(), "checkpoint_id"},
		{"Put", put(func(in *saver.PutCheckpoint) { in.ID = long }).Validate(), "checkpoint_id"},
		{"Parent", put(func(in *saver.PutCheckpoint) { in.ParentID = long }).Validate(), "parent_checkpoint_id"},
		{"ExpectedHead", put(func(in *saver.PutCheckpoint) { in.ExpectHead = &long }).Validate(), "expected_head"},
		{"Writes", (&saver.PutWrites{CheckpointRef: ref(long)}).Validate(), "checkpoint_id"},
		{"ListID", (&saver.ListFilter{CheckpointID: long}).Validate(), "checkpoint_id"},
		{"ListBefore", (&saver.ListFilter{Before: long}).Validate(), "before"},
		{"ListCursor", (&saver.ListFilter{After: &saver.ListPosition{ID: long}}).Validate(), "cursor checkpoint_id"},
		{"ListNS", (&saver.ListFilter{NS: &long}).Validate(), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.field == "" {
				if tt.err != nil {
					t.Fatalf("err=%v, want none (namespaces are not kept whole in keys)", tt.err)
				}
				return
			}
			if saver.ErrorCode(tt.err) != saver.EINVALID || !strings.HasPrefix(saver.ErrorMessage(tt.err), tt.field+" takes 768 bytes") {
				t.Fatalf("err=%v, want EINVALID naming %s", tt.err, tt.field)
			}
		})
	}
	if err := ref(edge).Validate(); err != nil {
		t.Fatalf("an id of exactly %d key bytes: %v", saver.MaxIDKeyBytes, err)
	}
	if err := ref(edge + "x").Validate(); err == nil {
		t.Fatalf("an id of %d key bytes passed", saver.MaxIDKeyBytes+1)
	}
}

func TestPruneStrategyValidate(t *testing.T) {
	for _, tt := range []struct {
		in   saver.PruneStrategy
		want string // the error's message; "" when valid
	}{
		{saver.PruneKeepLatest, ""},
		{saver.PruneDelete, ""},
		{"", `strategy "" is unknown; use "keep_latest" or "delete".`},
		{"keep_all", `strategy "keep_all" is unknown; use "keep_latest" or "delete".`},
	} {
		err := tt.in.Validate()
		if tt.want == "" {
			if err != nil {
				t.Errorf("%q: %v", tt.in, err)
			}
			continue
		}
		if saver.ErrorCode(err) != saver.EINVALID || saver.ErrorMessage(err) != tt.want {
			t.Errorf("%q: got %v (%s), want EINVALID %q", tt.in, err, saver.ErrorCode(err), tt.want)
		}
	}
}
