package storetest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/saver-dev/saver"
)

// knownHistory asks for the histories of channels at ref's checkpoint from
// a client that holds the history at known.
func knownHistory(tb testing.TB, s saver.Store, ref saver.CheckpointRef, known string, maxBytes int64, channels ...string) (map[string]*saver.DeltaHistory, error) {
	tb.Helper()
	in := saver.DeltaRequest{CheckpointRef: ref, Channels: channels, Known: known, MaxBytes: maxBytes}
	if err := in.Validate(); err != nil {
		tb.Fatalf("Validate(delta request): %v", err)
	}
	return s.DeltaHistory(tb.Context(), in)
}

// testDeltaKnown answers only what is new to a client that holds the
// history at an ancestor (DeltaRequest.Known): the writes from the target's
// parent down to that ancestor, its own included, and Next naming it for
// the channels whose history goes on there; spliced onto the held history,
// that is the whole. A known checkpoint the chain does not reach before its
// seed changes nothing; one that is no ancestor is refused.
func testDeltaKnown(t *testing.T, s saver.Store) {
	ref := NewRef()
	PutChat(t, s, ref, 8, 1)
	deltaKnownAncestors(t, s, ref)
	deltaKnownOthers(t, s, ref)
}

// deltaKnownAncestors asks the chat at ref (eight turns, a snapshot at the
// first) known at its ancestors.
func deltaKnownAncestors(t *testing.T, s saver.Store, ref saver.CheckpointRef) {
	whole := Histories(MustDeltaHistory(t, s, At(ref, "0008"), "messages"))
	t.Run("Ancestor", func(t *testing.T) {
		h, err := knownHistory(t, s, At(ref, "0008"), "0005", 0, "messages")
		if err != nil {
			t.Fatalf("DeltaHistory known 0005: %v", err)
		}
		got := h["messages"]
		if got.Next != "0005" || got.Seed != nil {
			t.Fatalf("history known 0005: next %q, seed %v; want next 0005 and no seed", got.Next, got.Seed)
		}
		if diff := cmp.Diff(ChatWrites(5, 7), Histories(h)["messages"].Writes); diff != "" {
			t.Fatalf("writes known 0005 (-want +got):\n%s", diff)
		}
		held := MustDeltaHistory(t, s, At(ref, "0005"), "messages")["messages"]
		spliced := map[string]*saver.DeltaHistory{"messages": {Seed: held.Seed, Writes: append(held.Writes, got.Writes...)}}
		if diff := cmp.Diff(whole, Histories(spliced), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("held history at 0005 and the answer known 0005 differ from the whole (-whole +spliced):\n%s", diff)
		}
	})
	t.Run("Parent", func(t *testing.T) {
		h, err := knownHistory(t, s, At(ref, "0008"), "0007", 0, "messages")
		if err != nil {
			t.Fatalf("DeltaHistory known 0007: %v", err)
		}
		if got := Histories(h)["messages"]; got.HasSeed || h["messages"].Next != "0007" || !cmp.Equal(got.Writes, ChatWrites(7, 7)) {
			t.Fatalf("history known 0007 = %+v, next %q; want m7 alone, next 0007", got, h["messages"].Next)
		}
	})
	t.Run("AtSeed", func(t *testing.T) {
		// The known ancestor holds the seed: the history ends there, whole.
		h, err := knownHistory(t, s, At(ref, "0008"), "0001", 0, "messages")
		if err != nil {
			t.Fatalf("DeltaHistory known 0001: %v", err)
		}
		if h["messages"].Next != "" {
			t.Fatalf("history known 0001: next %q, want none", h["messages"].Next)
		}
		if diff := cmp.Diff(whole, Histories(h), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("history known 0001 (-whole +got):\n%s", diff)
		}
	})
	t.Run("Pages", func(t *testing.T) {
		// Pages end at the known ancestor as the whole does.
		got := map[string]*saver.DeltaHistory{"messages": {}}
		target, requests := At(ref, "0008"), 0
		for {
			h, err := knownHistory(t, s, target, "0004", 1, "messages")
			if err != nil {
				t.Fatalf("DeltaHistory page at %s known 0004: %v", target.ID, err)
			}
			requests++
			page := h["messages"]
			got["messages"].Writes = append(page.Writes, got["messages"].Writes...)
			if page.Next == "0004" || page.Next == "" {
				got["messages"].Next = page.Next
				break
			}
			target.ID = page.Next
		}
		if requests != 4 || got["messages"].Next != "0004" || !cmp.Equal(Histories(got)["messages"].Writes, ChatWrites(4, 7)) {
			t.Fatalf("pages known 0004: %d requests, next %q, %v; want 4, 0004, m4..m7", requests, got["messages"].Next, Histories(got)["messages"].Writes)
		}
	})
}

// deltaKnownOthers asks known at checkpoints that are not ancestors: on
// another branch, unknown, a descendant; and at a fork's ancestor.
func deltaKnownOthers(t *testing.T, s saver.Store, ref saver.CheckpointRef) {
	fork := NewRef()
	PutChat(t, s, fork, 4) // no snapshot: every history walks to the root
	PutDelta(t, s, fork, "0005", "0002", []string{"messages=5:"}, "messages")
	MustPutWrites(t, s, At(fork, "0005"), DeltaWrite("task", "messages", "fork"))
	PutDelta(t, s, fork, "0006", "0005", []string{"messages=6:"}, "messages")
	for _, tt := range []struct {
		name      string
		ref       saver.CheckpointRef
		target    string
		known     string
		want      History // when not refused
		wantError string
	}{
		// The seed comes before the known checkpoint, on the other branch:
		// the whole history, as if known were not given.
		{"OtherBranchAfterSeed", ref, "0008", "0009", seeded("S1", ChatWrites(1, 7)...), ""},
		// No seed: the walk reaches the root without meeting it.
		{"OtherBranch", fork, "0006", "0004", History{}, saver.EINVALID},
		{"Unknown", fork, "0006", "0099", History{}, saver.EINVALID},
		{"Descendant", fork, "0002", "0005", History{}, saver.EINVALID},
		{"NoTarget", fork, "0042", "0002", History{}, saver.EINVALID},
		{"ForkAncestor", fork, "0006", "0002", unseeded("task/0/messages=m2", "task/0/messages=fork"), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, err := knownHistory(t, s, At(tt.ref, tt.target), tt.known, 0, "messages")
			if got := saver.ErrorCode(err); got != tt.wantError {
				t.Fatalf("DeltaHistory at %s known %s: error %v, want code %q", tt.target, tt.known, err, tt.wantError)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tt.want, Histories(h)["messages"], cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("history at %s known %s (-want +got):\n%s", tt.target, tt.known, diff)
			}
		})
	}
}
