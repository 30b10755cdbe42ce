package saver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/saver-dev/saver"
)

func TestMetadataContains(t *testing.T) {
	md := saver.Metadata{"step": int64(1), "score": 0.5, "source": "loop", "ok": true,
		"parents": map[string]any{"": "c1"}, "tags": []any{"a", int64(2)}}
	tests := []struct {
		name   string
		filter saver.Metadata
		want   bool
	}{
		{"Empty", saver.Metadata{}, true},
		{"String", saver.Metadata{"source": "loop"}, true},
		{"IntEqualsFloat", saver.Metadata{"step": 1.0}, true},
		{"FloatEqualsInt", saver.Metadata{"score": 0.5}, true},
		{"AllKeys", saver.Metadata{"source": "loop", "step": int64(1)}, true},
		{"OneKeyDiffers", saver.Metadata{"source": "loop", "step": int64(2)}, false},
		{"NestedMap", saver.Metadata{"parents": map[string]any{"": "c1"}}, true},
		{"PartialNestedMapIsNotEqual", saver.Metadata{"parents": map[string]any{}}, false},
		{"List", saver.Metadata{"tags": []any{"a", 2.0}}, true},
		{"ListOrderMatters", saver.Metadata{"tags": []any{int64(2), "a"}}, false},
		{"NilMatchesMissing", saver.Metadata{"run_id": nil}, true},
		{"NilDoesNotMatchValue", saver.Metadata{"source": nil}, false},
		{"BoolIsNotNumber", saver.Metadata{"ok": int64(1)}, false},
		{"MissingKey", saver.Metadata{"run_id": "r"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := md.Contains(tt.filter); got != tt.want {
				t.Fatalf("Contains(%v)=%v, want %v", tt.filter, got, tt.want)
			}
		})
	}
}

func TestNormalizeValue(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want any
		err  bool
	}{
		{"Int8", int8(-3), int64(-3), false},
		{"Uint64Big", uint64(1 << 63), float64(1 << 63), false},
		{"JSONInt", json.Number("42"), int64(42), false},
		{"JSONFloat", json.Number("4.5"), 4.5, false},
		{"MapAnyAny", map[any]any{"a": int16(1)}, map[string]any{"a": int64(1)}, false},
		{"MapNonStringKey", map[any]any{1: "x"}, nil, true},
		{"Unsupported", struct{}{}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := saver.NormalizeValue(tt.in)
			if (err != nil) != tt.err {
				t.Fatalf("err=%v, want error %v", err, tt.err)
			}
			if err == nil && !saver.Equal(got, tt.want) {
				t.Fatalf("got %#v, want %#v", got, tt.want)
			}
			if err != nil && saver.ErrorCode(err) != saver.EINVALID {
				t.Fatalf("code %s, want invalid", saver.ErrorCode(err))
			}
		})
	}
	deep := any("x")
	for i := 0; i < 40; i++ {
		deep = []any{deep}
	}
	if _, err := saver.NormalizeValue(deep); err == nil {
		t.Fatal("40 levels of nesting accepted")
	}
}

func TestErrorCode(t *testing.T) {
	tests := []struct {
		err  error
		code string
	}{
		{nil, ""},
		{saver.Errorf(saver.ENOTFOUND, "x"), saver.ENOTFOUND},
		{fmt.Errorf("wrap: %w", saver.Errorf(saver.ECONFLICT, "x")), saver.ECONFLICT},
		{fmt.Errorf("embedded: %w", context.DeadlineExceeded), saver.EUNAVAILABLE},
		{context.Canceled, saver.EUNAVAILABLE},
		{errors.New("boom"), saver.EINTERNAL},
	}
	for _, tt := range tests {
		if got := saver.ErrorCode(tt.err); got != tt.code {
			t.Fatalf("ErrorCode(%v)=%q, want %q", tt.err, got, tt.code)
		}
	}
	if got := saver.ErrorMessage(errors.New("secret path")); got != "Internal error." {
		t.Fatalf("internal message leaked: %q", got)
	}
}

func TestExtendedBlobExpiry(t *testing.T) {
	now := time.Unix(1000, 0)
	tests := []struct {
		name             string
		checkpoint, blob int64
		want             int64
		write            bool
	}{
		{"BlobForever", 2000, 0, 0, false},
		{"CheckpointForever", 0, 1500, 0, true},
		{"BlobOutlives", 2000, 2500, 2500, false},
		{"BlobEqual", 2000, 2000, 2000, false},
		{"BlobShorterGetsTwiceRemaining", 2000, 1500, 3000, true},
		{"CheckpointAlreadyPast", 900, 800, 900, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, write := saver.ExtendedBlobExpiry(tt.checkpoint, tt.blob, now)
			if got != tt.want || write != tt.write {
				t.Fatalf("=(%d,%v), want (%d,%v)", got, write, tt.want, tt.write)
			}
		})
	}
	if !saver.Expired(1000, now) || saver.Expired(1001, now) || saver.Expired(0, now) {
		t.Fatal("Expired boundaries wrong")
	}
}
