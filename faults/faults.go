// Package faults is test support: an http.RoundTripper that sits between the
// AWS SDK and DynamoDB or S3 and answers some requests itself with the errors
// those services send when they shed load or fail: ThrottlingException,
// ProvisionedThroughputExceededException, 500 InternalServerError, 503 (S3's
// SlowDown), or a refused connection as when the service is down.
//
// Which requests fail is decided by Rules: the first N requests, a fraction
// of them, or both, per service and operation. Faulted requests never reach
// the service, so they can never have been half-applied; everything else is
// passed to the base transport unchanged.
//
//	ft := faults.New(nil, faults.Rule{Service: faults.DynamoDB, Fault: faults.Throttle, Rate: 0.3})
//	db := dynamo.NewClient(cfg, nil, func(o *dynamodb.Options) { o.HTTPClient = ft.Client() })
//
// It is for tests only: the service enables it solely through SAVER_FAULTS,
// which is documented as test-only (cmd/saver/faults.go).
package faults

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Services a Rule can name.
const (
	DynamoDB = "dynamodb"
	S3       = "s3"
)

// Fault is what a faulted request gets instead of the service's answer.
type Fault string

// The faults, named as in SAVER_FAULTS.
const (
	// Throttle is DynamoDB's ThrottlingException (400), S3's SlowDown (503).
	Throttle Fault = "throttle"
	// Provisioned is DynamoDB's ProvisionedThroughputExceededException (400);
	// on S3, SlowDown (503).
	Provisioned Fault = "provisioned"
	// ServerError is a 500: DynamoDB's InternalServerError, S3's InternalError.
	ServerError Fault = "error"
	// Unavailable is a 503 ServiceUnavailable.
	Unavailable Fault = "unavailable"
	// Down refuses the connection, as when the service is not running.
	Down Fault = "down"
	// Conflict is DynamoDB's answer to a write that met a concurrent
	// transaction on one of its items: a TransactWriteItems cancelled with
	// TransactionConflict as the reason of each of its actions, a PutItem,
	// UpdateItem or DeleteItem a TransactionConflictException (400). It
	// applies to those four operations only.
	Conflict Fault = "conflict"
	// Unprocessed is DynamoDB's answer to a batch under load: a
	// BatchWriteItem or BatchGetItem answered 200 with every item or key
	// of the request left unprocessed (nothing written or read). It
	// applies to those two operations only; other requests pass.
	Unprocessed Fault = "unprocessed"
)

var allFaults = []Fault{Throttle, Provisioned, ServerError, Unavailable, Down, Conflict, Unprocessed}

// appliesTo reports whether fault can be given to a request of op.
func (f Fault) appliesTo(service, op string) bool {
	switch f {
	case Conflict:
		return service == DynamoDB && (op == "TransactWriteItems" || op == "PutItem" || op == "UpdateItem" || op == "DeleteItem")
	case Unprocessed:
		return service == DynamoDB && (op == "BatchWriteItem" || op == "BatchGetItem")
	}
	return true
}

// Rule says which requests get a fault.
type Rule struct {
	Service string  // DynamoDB, S3, or "" for both
	Op      string  // DynamoDB operation (e.g. "TransactWriteItems") or S3 HTTP method; "" for any
	Fault   Fault   // what the faulted requests get
	Skip    int64   // let this many matching requests through first
	Count   int64   // fault at most this many matching requests; 0: no limit
	Rate    float64 // chance that a matching request (past Skip) gets the fault; 1: every one
}

func (r Rule) String() string {
	s := fmt.Sprintf("%s:%s=%g", cmpOr(r.Service, "*"), r.Fault, r.Rate)
	if r.Op != "" {
		s += ",op=" + r.Op
	}
	if r.Skip > 0 {
		s += ",skip=" + strconv.FormatInt(r.Skip, 10)
	}
	if r.Count > 0 {
		s += ",count=" + strconv.FormatInt(r.Count, 10)
	}
	return s
}

func (r Rule) matches(service, op string) bool {
	return (r.Service == "" || r.Service == service) && (r.Op == "" || strings.EqualFold(r.Op, op))
}

// rule is a Rule with its counters.
type rule struct {
	Rule
	seen, injected int64
}

// Transport is the faulting http.RoundTripper. Its methods are safe for
// concurrent use; Set and Clear change the rules while requests run.
type Transport struct {
	base http.RoundTripper

	mu     sync.Mutex
	rules  []*rule
	delay  map[string]time.Duration // per service; "" for both
	rng    *rand.Rand
	stats  Stats
	notify func(Stats)
}

// Stats counts what the transport saw and did.
type Stats struct {
	// Requests counts every request by service, faulted or not.
	Requests map[string]int64 `json:"requests"`
	// Injected counts faulted requests by "service:fault".
	Injected map[string]int64 `json:"injected"`
}

// Total is the number of faulted requests.
func (s Stats) Total() int64 {
	var n int64
	for _, v := range s.Injected {
		n += v
	}
	return n
}

func (s Stats) clone() Stats {
	out := Stats{Requests: map[string]int64{}, Injected: map[string]int64{}}
	for k, v := range s.Requests {
		out.Requests[k] = v
	}
	for k, v := range s.Injected {
		out.Injected[k] = v
	}
	return out
}

// New returns a Transport in front of base (http.DefaultTransport when nil)
// with the given rules. Its random choices are seeded from the clock; use
// Seed for a repeatable sequence.
func New(base http.RoundTripper, rules ...Rule) *Transport {
	if base == nil {
		base = http.DefaultTransport
	}
	t := &Transport{
		base:  base,
		delay: map[string]time.Duration{},
		rng:   rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(os.Getpid()))),
		stats: Stats{Requests: map[string]int64{}, Injected: map[string]int64{}},
	}
	t.Set(rules...)
	return t
}

// Seed makes the transport's random choices repeatable.
func (t *Transport) Seed(seed uint64) *Transport {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return t
}

// Delay adds latency d before every request to service ("" for both).
func (t *Transport) Delay(service string, d time.Duration) *Transport {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.delay[service] = d
	return t
}

// OnRequest registers fn to be called with the counters after every
// request; cmd/saver writes them to a file with it.
func (t *Transport) OnRequest(fn func(Stats)) *Transport {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.notify = fn
	return t
}

// Set replaces the rules, with fresh counters.
func (t *Transport) Set(rules ...Rule) {
	rs := make([]*rule, len(rules))
	for i, r := range rules {
		rs[i] = &rule{Rule: r}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rules = rs
}

// Clear removes every rule: from now on requests pass, as when the backend
// recovers.
func (t *Transport) Clear() { t.Set() }

// Stats returns a copy of the counters.
func (t *Transport) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stats.clone()
}

// Client returns an *http.Client on the transport, which satisfies the SDK's
// aws.HTTPClient (dynamodb.Options.HTTPClient, aws.Config.HTTPClient).
func (t *Transport) Client() *http.Client { return &http.Client{Transport: t} }

// ServiceOf tells DynamoDB requests (they name their operation in
// X-Amz-Target) from S3 ones.
func ServiceOf(req *http.Request) string {
	if strings.HasPrefix(req.Header.Get("X-Amz-Target"), "DynamoDB_") {
		return DynamoDB
	}
	return S3
}

// OperationOf returns the DynamoDB operation of req, or its HTTP method for S3.
func OperationOf(req *http.Request) string {
	if target := req.Header.Get("X-Amz-Target"); target != "" {
		if _, op, ok := strings.Cut(target, "."); ok {
			return op
		}
	}
	return req.Method
}

// decide counts req and returns the fault it gets, "" for none.
func (t *Transport) decide(service, op string) (Fault, time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stats.Requests[service]++
	delay := t.delay[""] + t.delay[service]
	for _, r := range t.rules {
		if !r.matches(service, op) || !r.Fault.appliesTo(service, op) {
			continue
		}
		r.seen++
		if r.seen <= r.Skip || (r.Count > 0 && r.injected >= r.Count) {
			continue
		}
		if r.Rate >= 1 || t.rng.Float64() < r.Rate {
			r.injected++
			t.stats.Injected[service+":"+string(r.Fault)]++
			return r.Fault, delay
		}
	}
	return "", delay
}

// RoundTrip answers req with a fault or passes it to the base transport.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	service, op := ServiceOf(req), OperationOf(req)
	fault, delay := t.decide(service, op)
	defer func() {
		t.mu.Lock()
		fn, st := t.notify, t.stats.clone()
		t.mu.Unlock()
		if fn != nil {
			fn(st)
		}
	}()
	if delay > 0 {
		timer := time.NewTimer(delay)
		select {
		case <-timer.C:
		case <-req.Context().Done():
			timer.Stop()
			closeBody(req)
			return nil, req.Context().Err()
		}
	}
	if fault == "" {
		return t.base.RoundTrip(req)
	}
	// The request never reaches the service, as if the service had refused
	// it before doing anything.
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
	}
	if fault == Down {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	return response(req, service, op, fault, body)
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
}

var requestSeq atomic.Int64

// response builds the answer the real service gives for fault to a request
// of op with body.
func response(req *http.Request, service, op string, fault Fault, reqBody []byte) (*http.Response, error) {
	id := fmt.Sprintf("faults-%d", requestSeq.Add(1))
	h := http.Header{}
	var (
		status int
		body   string
	)
	if service == DynamoDB {
		var typ, msg string
		switch fault {
		case Unprocessed:
			b, err := unprocessed(op, reqBody)
			if err != nil {
				return nil, err
			}
			status, body = 200, string(b)
		case Conflict:
			b, err := conflict(op, reqBody)
			if err != nil {
				return nil, err
			}
			status, body = 400, string(b)
		case Throttle:
			status, typ, msg = 400, "com.amazonaws.dynamodb.v20120810#ThrottlingException", "Rate of requests exceeds the allowed throughput."
		case Provisioned:
			status, typ, msg = 400, "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException", "The level of configured provisioned throughput for the table was exceeded."
		case ServerError:
			status, typ, msg = 500, "com.amazonaws.dynamodb.v20120810#InternalServerError", "Internal server error"
		default:
			status, typ, msg = 503, "com.amazon.coral.availability#ServiceUnavailableException", "Service unavailable"
		}
		if body == "" {
			body = fmt.Sprintf(`{"__type":%q,"message":%q}`, typ, msg+" (injected by faults)")
		}
		h.Set("Content-Type", "application/x-amz-json-1.0")
		h.Set("X-Amzn-RequestId", id)
		// DynamoDB signs its bodies with a CRC32 the SDK checks.
		h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 10))
	} else {
		var code, msg string
		switch fault {
		case Throttle, Provisioned:
			status, code, msg = 503, "SlowDown", "Please reduce your request rate."
		case ServerError:
			status, code, msg = 500, "InternalError", "We encountered an internal error. Please try again."
		default:
			status, code, msg = 503, "ServiceUnavailable", "Service is unable to handle request."
		}
		h.Set("Content-Type", "application/xml")
		h.Set("X-Amz-Request-Id", id)
		if req.Method != http.MethodHead {
			body = fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
				`<Error><Code>%s</Code><Message>%s (injected by faults)</Message><RequestId>%s</RequestId></Error>`, code, msg, id)
		}
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", status, http.StatusText(status)),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}, nil
}

// unprocessed answers a batch request with all of it left unprocessed.
func unprocessed(op string, reqBody []byte) ([]byte, error) {
	var in struct {
		RequestItems json.RawMessage
	}
	if err := json.Unmarshal(reqBody, &in); err != nil {
		return nil, fmt.Errorf("faults: read %s request: %w", op, err)
	}
	if op == "BatchGetItem" {
		return json.Marshal(map[string]any{"Responses": map[string]any{}, "UnprocessedKeys": in.RequestItems})
	}
	return json.Marshal(map[string]any{"UnprocessedItems": in.RequestItems})
}

// conflict answers a request as cancelled by a concurrent transaction.
func conflict(op string, reqBody []byte) ([]byte, error) {
	const prefix = "com.amazonaws.dynamodb.v20120810#"
	if op != "TransactWriteItems" {
		return json.Marshal(map[string]string{
			"__type":  prefix + "TransactionConflictException",
			"message": "Transaction is ongoing for the item (injected by faults)",
		})
	}
	var in struct {
		TransactItems []json.RawMessage
	}
	if err := json.Unmarshal(reqBody, &in); err != nil {
		return nil, fmt.Errorf("faults: read %s request: %w", op, err)
	}
	reasons := make([]map[string]string, len(in.TransactItems))
	codes := make([]string, len(in.TransactItems))
	for i := range reasons {
		reasons[i] = map[string]string{"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}
		codes[i] = "TransactionConflict"
	}
	return json.Marshal(map[string]any{
		"__type":              prefix + "TransactionCanceledException",
		"Message":             "Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "] (injected by faults)",
		"CancellationReasons": reasons,
	})
}

// Spec is a parsed SAVER_FAULTS value.
type Spec struct {
	Rules []Rule
	Delay map[string]time.Duration // per service
	Seed  uint64                   // 0: from the clock
}

// Parse reads a fault spec: clauses separated by ";", each a service, a
// colon and comma-separated settings:
//
//	dynamodb:throttle=0.3                     30% of DynamoDB requests throttled
//	dynamodb:throttle=0.2,provisioned=0.1,error=0.05
//	dynamodb:throttle=1,count=5               the first 5 DynamoDB requests throttled
//	dynamodb:error=1,op=TransactWriteItems,skip=2
//	s3:throttle=0.3;dynamodb:delay=20ms
//
// A fault (throttle, provisioned, error, unavailable, down, conflict,
// unprocessed) takes the rate
// in [0, 1] at which matching requests get it; op, skip and count apply to
// every fault of the clause; delay adds latency to every request of the
// service; seed (any clause) fixes the random sequence.
func Parse(spec string) (Spec, error) {
	out := Spec{Delay: map[string]time.Duration{}}
	for _, clause := range strings.Split(spec, ";") {
		clause = strings.TrimSpace(clause)
		if clause == "" {
			continue
		}
		if err := out.parseClause(clause); err != nil {
			return Spec{}, err
		}
	}
	return out, nil
}

// parseClause adds one clause's rules and settings to s.
func (s *Spec) parseClause(clause string) error {
	service, settings, ok := strings.Cut(clause, ":")
	service = strings.TrimSpace(service)
	if !ok || (service != DynamoDB && service != S3) {
		return fmt.Errorf("faults: %q: want dynamodb:... or s3:...", clause)
	}
	var (
		rules       []Rule
		op          string
		skip, count int64
	)
	for _, kv := range strings.Split(settings, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return fmt.Errorf("faults: %q: want key=value", kv)
		}
		var err error
		switch k {
		case "op":
			op = v
		case "skip":
			skip, err = strconv.ParseInt(v, 10, 64)
		case "count":
			count, err = strconv.ParseInt(v, 10, 64)
		case "delay":
			s.Delay[service], err = time.ParseDuration(v)
		case "seed":
			s.Seed, err = strconv.ParseUint(v, 10, 64)
		default:
			if !isFault(Fault(k)) {
				return fmt.Errorf("faults: unknown setting %q (faults: %v; op, skip, count, delay, seed)", k, allFaults)
			}
			var r Rule
			r, err = parseRate(service, Fault(k), v)
			rules = append(rules, r)
		}
		if err != nil || skip < 0 || count < 0 {
			return fmt.Errorf("faults: %s=%q: %v", k, v, cmpOr(err, errors.New("must not be negative")))
		}
	}
	for _, r := range rules {
		r.Op, r.Skip, r.Count = op, skip, count
		s.Rules = append(s.Rules, r)
	}
	return nil
}

// parseRate reads the rate of a fault: in [0, 1].
func parseRate(service string, f Fault, rate string) (Rule, error) {
	r, err := strconv.ParseFloat(rate, 64)
	if err == nil && !(r >= 0 && r <= 1) {
		err = errors.New("a rate is between 0 and 1")
	}
	return Rule{Service: service, Fault: f, Rate: r}, err
}

// Transport returns a Transport for the spec in front of base.
func (s Spec) Transport(base http.RoundTripper) *Transport {
	t := New(base, s.Rules...)
	if s.Seed != 0 {
		t.Seed(s.Seed)
	}
	services := make([]string, 0, len(s.Delay))
	for svc := range s.Delay {
		services = append(services, svc)
	}
	sort.Strings(services)
	for _, svc := range services {
		t.Delay(svc, s.Delay[svc])
	}
	return t
}

func isFault(f Fault) bool {
	for _, g := range allFaults {
		if f == g {
			return true
		}
	}
	return false
}

func cmpOr[T comparable](vals ...T) T {
	var zero T
	for _, v := range vals {
		if v != zero {
			return v
		}
	}
	return zero
}
