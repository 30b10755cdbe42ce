package metrics_test

import (
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/saver-dev/saver/metrics"
)

func TestMetrics(t *testing.T) {
	m := metrics.New()
	m.ObserveRequest("/v1/threads/:thread_id/checkpoints", "POST", 200, 3*time.Millisecond, 1200, 80)
	m.ObserveRequest("/v1/threads/:thread_id/checkpoints", "POST", 200, 4*time.Millisecond, 800, 80)
	m.ObserveRequest("/v1/threads/:thread_id/checkpoint", "GET", 404, time.Millisecond, 0, 60)
	m.ObserveClaim("claimed")
	m.ObserveClaim("completed")
	m.ObserveClaim("completed")
	m.ObserveItemOp("search")
	m.ObserveItemOp("search")
	m.ObserveSweep(3, nil)
	m.ObserveSweep(0, errors.New("s3 down"))
	m.RegisterCounts("saver_dynamodb_requests_total", "DynamoDB requests.", "operation",
		func() map[string]int64 { return map[string]int64{"Query": 7, "TransactWriteItems": 2} })

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`saver_http_requests_total{method="POST",route="/v1/threads/:thread_id/checkpoints",status="200"} 2`,
		`saver_http_requests_total{method="GET",route="/v1/threads/:thread_id/checkpoint",status="404"} 1`,
		`saver_http_request_bytes_total{route="/v1/threads/:thread_id/checkpoints"} 2000`,
		`saver_idempotency_claims_total{outcome="completed"} 2`,
		`saver_store_ops_total{kind="search"} 2`,
		`saver_sweeper_runs_total{result="error"} 1`,
		`saver_sweeper_objects_removed_total 3`,
		`saver_dynamodb_requests_total{operation="Query"} 7`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestMetrics_MethodLabel: any method string became a label value, so 5,000
// made-up methods grew /metrics from 81 KB to 9.3 MB. Only HTTP's own
// methods are labels; the rest count as "other".
func TestMetrics_MethodLabel(t *testing.T) {
	m := metrics.New()
	size := func() int {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		return rec.Body.Len()
	}
	m.ObserveRequest("unmatched", "GET", 404, time.Millisecond, 0, 60)
	m.ObserveRequest("unmatched", "OTHER", 404, time.Millisecond, 0, 60)
	before := size()
	for i := 0; i < 5000; i++ {
		m.ObserveRequest("unmatched", fmt.Sprintf("M%d", i), 404, time.Millisecond, 0, 60)
	}
	if grown := size() - before; grown > 1024 {
		t.Fatalf("5,000 made-up methods grew the metrics by %d bytes", grown)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if want := `saver_http_requests_total{method="other",route="unmatched",status="404"} 5001`; !strings.Contains(rec.Body.String(), want) {
		t.Fatalf("metrics lack %q", want)
	}
}
