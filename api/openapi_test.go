package api_test

import (
	"net/http"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/saver-dev/saver/api/apitest"
)

// TestOpenAPIMatchesRoutes checks the OpenAPI document against the routes a
// server with every optional capability registers: each route is
// documented and each documented route exists.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	s := MustMockServer(t, &apitest.Store{}) // tree, ledger and expiry: every capability with routes
	s.Metrics = http.NotFoundHandler()
	rec := do(t, s, "GET", "/openapi.yaml", "", nil)
	if rec.Code != 200 {
		t.Fatalf("GET /openapi.yaml: %d", rec.Code)
	}
	var doc struct {
		OpenAPI string                    `yaml:"openapi"`
		Paths   map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatalf("openapi.yaml does not parse: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi %q, want 3.x", doc.OpenAPI)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			if method == "parameters" {
				continue
			}
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	served := map[string]bool{}
	for _, r := range s.Routes() {
		if strings.HasSuffix(r.Path, "*") || strings.HasPrefix(r.Method, "echo_route_") {
			continue // echo's own catch-alls for not-found handling
		}
		path := r.Path
		for _, seg := range strings.Split(path, "/") {
			if strings.HasPrefix(seg, ":") {
				path = strings.Replace(path, seg, "{"+seg[1:]+"}", 1)
			}
		}
		served[r.Method+" "+path] = true
	}
	var missing, stale []string
	for r := range served {
		if !documented[r] {
			missing = append(missing, r)
		}
	}
	for r := range documented {
		if !served[r] {
			stale = append(stale, r)
		}
	}
	sort.Strings(missing)
	sort.Strings(stale)
	if len(missing) > 0 || len(stale) > 0 {
		t.Fatalf("routes not in openapi.yaml: %v\ndocumented routes not served: %v", missing, stale)
	}
}
