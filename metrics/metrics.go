// Package metrics exposes the service's Prometheus metrics: HTTP requests,
// store requests by backend, idempotency claims and sweeper runs.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds every metric of one service, in its own registry so tests
// can build as many as they like.
type Metrics struct {
	registry *prometheus.Registry

	requests     *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	bytesIn      *prometheus.CounterVec
	bytesOut     *prometheus.CounterVec
	claims       *prometheus.CounterVec
	itemOps      *prometheus.CounterVec
	sweeps       *prometheus.CounterVec
	sweptObjects prometheus.Counter
}

// New returns metrics registered with a new registry, including the Go
// runtime and process collectors.
func New() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "saver_http_requests_total",
			Help: "HTTP requests by operation (route), method and status.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "saver_http_request_duration_seconds",
			Help: "HTTP request latency by operation (route).",
			// From a cached read on the embedded store to a throttled DynamoDB put.
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route", "method"}),
		bytesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "saver_http_request_bytes_total",
			Help: "Request body bytes read, by operation (route).",
		}, []string{"route"}),
		bytesOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "saver_http_response_bytes_total",
			Help: "Response body bytes written, by operation (route).",
		}, []string{"route"}),
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "saver_idempotency_claims_total",
			Help: "Idempotency claims by outcome: claimed, in_progress, completed, failed.",
		}, []string{"outcome"}),
		itemOps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "saver_store_ops_total",
			Help: "Store (BaseStore) ops answered, by kind: get, put, delete, search, list_namespaces.",
		}, []string{"kind"}),
		sweeps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "saver_sweeper_runs_total",
			Help: "Offload sweeper runs by result (ok, error).",
		}, []string{"result"}),
		sweptObjects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "saver_sweeper_objects_removed_total",
			Help: "Orphaned S3 objects the sweeper removed.",
		}),
	}
	m.registry.MustRegister(m.requests, m.latency, m.bytesIn, m.bytesOut, m.claims, m.itemOps, m.sweeps, m.sweptObjects,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

// ObserveRequest records one HTTP request. route is the route pattern, never
// the raw path, so thread ids never become label values; the caller keeps it
// to the routes it serves. method is labelled only when it is one of HTTP's
// own: a client may send any token there.
func (m *Metrics) ObserveRequest(route, method string, status int, d time.Duration, in, out int64) {
	method = MethodLabel(method)
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route, method).Observe(d.Seconds())
	if in > 0 {
		m.bytesIn.WithLabelValues(route).Add(float64(in))
	}
	if out > 0 {
		m.bytesOut.WithLabelValues(route).Add(float64(out))
	}
}

// methods are the label values of the method label.
var methods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodConnect: true,
	http.MethodOptions: true, http.MethodTrace: true,
}

// MethodLabel is method as a label value: itself for HTTP's methods,
// "other" for any other token.
func MethodLabel(method string) string {
	if methods[method] {
		return method
	}
	return "other"
}

// ObserveClaim records the outcome of one idempotency claim.
func (m *Metrics) ObserveClaim(outcome string) { m.claims.WithLabelValues(outcome).Inc() }

// ObserveItemOp records one op of a Store batch; kind is one the API
// accepted (get, put, delete, search, list_namespaces), so the label has
// five values.
func (m *Metrics) ObserveItemOp(kind string) { m.itemOps.WithLabelValues(kind).Inc() }

// ObserveSweep records one sweeper run.
func (m *Metrics) ObserveSweep(removed int, err error) {
	if err != nil {
		m.sweeps.WithLabelValues("error").Inc()
		return
	}
	m.sweeps.WithLabelValues("ok").Inc()
	m.sweptObjects.Add(float64(removed))
}

// RegisterCounts exposes counts kept elsewhere (a store's request counter)
// as a counter family: name{label=key} for each key of snapshot().
func (m *Metrics) RegisterCounts(name, help, label string, snapshot func() map[string]int64) {
	m.registry.MustRegister(&countsCollector{
		desc:     prometheus.NewDesc(name, help, []string{label}, nil),
		snapshot: snapshot,
	})
}

type countsCollector struct {
	desc     *prometheus.Desc
	snapshot func() map[string]int64
}

func (c *countsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *countsCollector) Collect(ch chan<- prometheus.Metric) {
	for k, v := range c.snapshot() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(v), k)
	}
}
