package api_test

import (
	"strings"
	"testing"

	"github.com/saver-dev/saver/api"
	"github.com/saver-dev/saver/api/apitest"
)

// TestUIViews: the /ui page names the views whose routes the server has,
// and is absent when it has neither.
func TestUIViews(t *testing.T) {
	m := &apitest.Store{}
	tests := []struct {
		name  string
		caps  api.Capabilities
		views string // "": no page
	}{
		{"Both", api.Capabilities{Tree: m, Items: m}, "tree memory"},
		{"TreeOnly", api.Capabilities{Tree: m}, "tree"},
		{"StoreOnly", api.Capabilities{Items: m}, "memory"},
		{"Neither", api.Capabilities{Ledger: m}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := MustServer(t, m)
			s.Capabilities = tt.caps
			rec := do(t, s, "GET", "/ui", "", nil)
			if tt.views == "" {
				if rec.Code != 404 {
					t.Fatalf("GET /ui: %d, want 404", rec.Code)
				}
				return
			}
			if rec.Code != 200 {
				t.Fatalf("GET /ui: %d", rec.Code)
			}
			if want := `<body data-views="` + tt.views + `">`; !strings.Contains(rec.Body.String(), want) {
				t.Fatalf("page lacks %q", want)
			}
			if rec := do(t, s, "GET", "/ui/app.js", "", nil); rec.Code != 200 {
				t.Fatalf("GET /ui/app.js: %d", rec.Code)
			}
		})
	}
}
