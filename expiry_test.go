package saver_test

import (
	"testing"
	"time"

	"github.com/saver-dev/saver"
)

func TestNewBlobExpiry(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	tests := []struct{ exp, want int64 }{
		{0, 0},
		{1_003_600, 1_007_200},
		{999_000, 999_000}, // already past: no remaining lifetime to double
	}
	for _, tt := range tests {
		if got := saver.NewBlobExpiry(tt.exp, now); got != tt.want {
			t.Errorf("NewBlobExpiry(%d) = %d, want %d", tt.exp, got, tt.want)
		}
	}
}
