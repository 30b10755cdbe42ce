package dynamo

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/internal/awsx"
)

// countingOffloader hands out a new reference for each payload offloaded.
type countingOffloader struct {
	Offloader
	n int
}

func (o *countingOffloader) Offload(context.Context, string, string, []byte, int64) (string, error) {
	o.n++
	return fmt.Sprint("obj-", o.n), nil
}

// TestOffloadThreshold checks the store's offload decision: a payload stays
// inline in an item up to OffloadThreshold bytes and goes to the offloader
// above it; without an offloader only DynamoDB's limit applies.
func TestOffloadThreshold(t *testing.T) {
	ref := saver.CheckpointRef{Tenant: "t", ThreadID: "th"}
	blob := saver.Blob{Channel: "ch", Version: "1", Value: saver.Typed{Type: "bytes", Data: []byte("payload")}}
	size := awsx.ItemSize(inlineBlobItem(ref, blob, 0))
	huge := blob
	huge.Value.Data = bytes.Repeat([]byte{'x'}, MaxItemBytes)
	tests := []struct {
		name      string
		offload   bool
		threshold int
		blob      saver.Blob
		offloaded bool
		code      string
	}{
		{"AtTheThreshold", true, size, blob, false, ""},
		{"OverTheThreshold", true, size - 1, blob, true, ""},
		{"Zero", true, 0, blob, true, ""},
		{"Default", true, DefaultOffloadThreshold, blob, false, ""},
		{"NoOffloader", false, 0, blob, false, ""},
		{"NoOffloaderOverTheLimit", false, 0, huge, false, saver.ETOOLARGE},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStore(nil, "t")
			off := &countingOffloader{}
			if tt.offload {
				s.Offload = off
			}
			s.OffloadThreshold = tt.threshold
			it, err := s.blobItem(t.Context(), ref, tt.blob, 0)
			if got := saver.ErrorCode(err); got != tt.code {
				t.Fatalf("blobItem: %v, want code %q", err, tt.code)
			}
			if err != nil {
				return
			}
			if got := valueRef(it) != ""; got != tt.offloaded || got != (off.n == 1) {
				t.Fatalf("offloaded %v after %d calls, want %v", got, off.n, tt.offloaded)
			}
		})
	}
}
