package api_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/saver-dev/saver/api/apitest"
)

// TestRequestIDBounded: a client's X-Request-ID is echoed when it is a
// plain token of at most 128 bytes; a longer one, or one holding other
// bytes (a header value can hold spaces, quotes, control bytes), is
// replaced by the service's own, so no client can grow the logs or the
// answer with it.
func TestRequestIDBounded(t *testing.T) {
	s := MustMockServer(t, &apitest.Store{})
	tests := []struct {
		name, id string
		echoed   bool
	}{
		{"Hex", "0123456789abcdef0123456789abcdef", true},
		{"Token", "run-7:step_3.retry", true},
		{"128Bytes", strings.Repeat("a", 128), true},
		{"129Bytes", strings.Repeat("a", 129), false},
		{"10KB", strings.Repeat("x", 10<<10), false},
		{"Space", "a b", false},
		{"Quote", `a"b`, false},
		{"NonASCII", "é", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/healthz", nil)
			req.Header.Set("X-Request-ID", tt.id)
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			got := rec.Header().Get("X-Request-ID")
			if tt.echoed && got != tt.id {
				t.Fatalf("X-Request-ID = %q, want %q echoed", got, tt.id)
			}
			if !tt.echoed && (got == tt.id || got == "" || len(got) > 128) {
				t.Fatalf("X-Request-ID = %q (%d bytes), want a fresh id of the service", got[:min(len(got), 40)], len(got))
			}
		})
	}
}
