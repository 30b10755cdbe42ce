// Command awsproxy is the benchmark's counting proxy: it sits in front of the
// local DynamoDB and S3 emulators on loopback and counts, per operation, the
// requests, request and response bytes and, for DynamoDB writes, the bytes
// of the items written and the write units they cost. Every saver that
// talks to DynamoDB through it is measured the same way, whatever its SDK.
//
//	awsproxy -dynamodb http://127.0.0.1:8000 -s3 http://127.0.0.1:4566 -addr-file F
//
// F gets {"dynamodb": "host:port", "s3": "host:port", "control": "host:port"}
// once every listener is up. On the control address, GET /counts returns
// the counts as JSON, POST /reset sets them back to zero and POST /delay?ms=N
// makes every DynamoDB request wait N ms before it is forwarded (a simulated
// network round trip; counted in upstream time).
//
// Write units follow DynamoDB's on-demand rule: one unit per started KB of
// each item written (PutItem, UpdateItem, DeleteItem, BatchWriteItem, every
// item of TransactWriteItems), at least one per item; "billed" doubles
// the units of transactional items, as DynamoDB does. An UpdateItem's item
// size is estimated from its key, attribute names and values (the stored
// item is not seen); a delete counts one unit.
package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Count is what one operation has cost so far.
type Count struct {
	Requests  int64 `json:"requests"`
	ReqBytes  int64 `json:"request_bytes"`
	RespBytes int64 `json:"response_bytes"`
	Items     int64 `json:"items_written"`
	ItemBytes int64 `json:"item_bytes_written"`
	WCU       int64 `json:"wcu"`
	BilledWCU int64 `json:"billed_wcu"`
	Micros    int64 `json:"upstream_us"` // time spent waiting on the emulator
}

type counters struct {
	mu    sync.Mutex
	m     map[string]map[string]*Count // service -> operation -> count
	delay time.Duration                // added before forwarding each DynamoDB request
}

func (c *counters) getDelay() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.delay
}

func (c *counters) add(service, op string, fn func(*Count)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ops := c.m[service]
	if ops == nil {
		ops = map[string]*Count{}
		c.m[service] = ops
	}
	n := ops[op]
	if n == nil {
		n = &Count{}
		ops[op] = n
	}
	fn(n)
}

func (c *counters) snapshot() map[string]map[string]Count {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]map[string]Count{"dynamodb": {}, "s3": {}}
	for svc, ops := range c.m {
		for op, n := range ops {
			out[svc][op] = *n
		}
	}
	return out
}

func (c *counters) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = map[string]map[string]*Count{}
}

func main() {
	dynamoTarget := flag.String("dynamodb", "", "DynamoDB endpoint to forward to")
	s3Target := flag.String("s3", "", "S3 endpoint to forward to")
	addrFile := flag.String("addr-file", "", "write the listen addresses here (JSON)")
	flag.Parse()
	if *dynamoTarget == "" || *s3Target == "" || *addrFile == "" {
		flag.Usage()
		os.Exit(2)
	}
	c := &counters{m: map[string]map[string]*Count{}}
	addrs := map[string]string{}
	serve := func(name string, h http.Handler) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			log.Fatal(err)
		}
		addrs[name] = ln.Addr().String()
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		go func() { log.Fatal(srv.Serve(ln)) }()
	}
	serve("dynamodb", proxy(*dynamoTarget, "dynamodb", c))
	serve("s3", proxy(*s3Target, "s3", c))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /counts", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(c.snapshot())
	})
	mux.HandleFunc("POST /reset", func(w http.ResponseWriter, r *http.Request) {
		c.reset()
		w.WriteHeader(http.StatusNoContent)
	})
	// POST /delay?ms=N adds N ms before each DynamoDB request: a stand-in for
	// the network round trip to a real region, which loopback does not have.
	mux.HandleFunc("POST /delay", func(w http.ResponseWriter, r *http.Request) {
		ms, err := strconv.ParseFloat(r.URL.Query().Get("ms"), 64)
		if err != nil || ms < 0 || ms > 1000 {
			http.Error(w, "ms: a number of milliseconds, 0 to 1000", http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		c.delay = time.Duration(ms * float64(time.Millisecond))
		c.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	serve("control", mux)

	data, _ := json.Marshal(addrs)
	tmp := filepath.Join(filepath.Dir(*addrFile), ".awsproxy-addr.tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.Rename(tmp, *addrFile); err != nil {
		log.Fatal(err)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
}

func proxy(target, service string, c *counters) http.Handler {
	u, err := url.Parse(target)
	if err != nil {
		log.Fatalf("%s: %v", target, err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
	}
	rp.ErrorLog = log.New(os.Stderr, "awsproxy: ", 0)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		var op string
		var written []itemWrite
		if service == "dynamodb" {
			op = r.Header.Get("X-Amz-Target")
			if i := strings.LastIndexByte(op, '.'); i >= 0 {
				op = op[i+1:]
			}
			written = dynamoWrites(op, body)
			if d := c.getDelay(); d > 0 {
				time.Sleep(d)
			}
		} else {
			op = s3Operation(r)
		}
		cw := &countingWriter{ResponseWriter: w}
		t0 := time.Now()
		rp.ServeHTTP(cw, r)
		took := time.Since(t0).Microseconds()
		c.add(service, op, func(n *Count) {
			n.Requests++
			n.Micros += took
			n.ReqBytes += int64(len(body))
			n.RespBytes += cw.n
			for _, it := range written {
				units := int64(math.Max(1, math.Ceil(float64(it.size)/1024)))
				n.Items++
				n.ItemBytes += it.size
				n.WCU += units
				if it.transactional {
					units *= 2
				}
				n.BilledWCU += units
			}
		})
	})
}

type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
}

func (w *countingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// s3Operation names an S3 request by method and what it addresses
// (path-style: /bucket or /bucket/key), plus its sub-resource if any.
func s3Operation(r *http.Request) string {
	path := strings.TrimPrefix(r.URL.Path, "/")
	target := "Bucket"
	if strings.Contains(path, "/") && !strings.HasSuffix(path, "/") {
		target = "Object"
	}
	q := r.URL.Query()
	for _, sub := range []string{"lifecycle", "tagging", "delete", "uploads", "uploadId", "list-type", "versioning", "location"} {
		if q.Has(sub) {
			return r.Method + target + "?" + sub
		}
	}
	return r.Method + target
}

type itemWrite struct {
	size          int64
	transactional bool
}

// dynamoWrites returns the items a DynamoDB write request writes, with
// their sizes; nil for reads.
func dynamoWrites(op string, body []byte) []itemWrite {
	var req map[string]json.RawMessage
	if json.Unmarshal(body, &req) != nil {
		return nil
	}
	switch op {
	case "PutItem":
		return []itemWrite{{size: itemSize(req["Item"])}}
	case "UpdateItem":
		return []itemWrite{{size: updateSize(req)}}
	case "DeleteItem":
		return []itemWrite{{size: 0}}
	case "BatchWriteItem":
		var tables map[string][]struct {
			PutRequest    *struct{ Item json.RawMessage }
			DeleteRequest *struct{ Key json.RawMessage }
		}
		json.Unmarshal(req["RequestItems"], &tables)
		var out []itemWrite
		for _, reqs := range tables {
			for _, r := range reqs {
				if r.PutRequest != nil {
					out = append(out, itemWrite{size: itemSize(r.PutRequest.Item)})
				} else {
					out = append(out, itemWrite{size: 0})
				}
			}
		}
		return out
	case "TransactWriteItems":
		var items []map[string]map[string]json.RawMessage
		json.Unmarshal(req["TransactItems"], &items)
		var out []itemWrite
		for _, it := range items {
			for kind, r := range it {
				var size int64
				switch kind {
				case "Put":
					size = itemSize(r["Item"])
				case "Update":
					size = updateSize(r)
				}
				out = append(out, itemWrite{size: size, transactional: true})
			}
		}
		return out
	}
	return nil
}

// updateSize estimates the item an update leaves: its key plus every
// attribute name and value the expression mentions.
func updateSize(r map[string]json.RawMessage) int64 {
	size := itemSize(r["Key"])
	var names map[string]string
	json.Unmarshal(r["ExpressionAttributeNames"], &names)
	for _, n := range names {
		size += int64(len(n))
	}
	var values map[string]json.RawMessage
	json.Unmarshal(r["ExpressionAttributeValues"], &values)
	for _, v := range values {
		size += valueSize(v)
	}
	return size
}

// itemSize is DynamoDB's item size: attribute names plus values.
func itemSize(raw json.RawMessage) int64 {
	var attrs map[string]json.RawMessage
	if json.Unmarshal(raw, &attrs) != nil {
		return 0
	}
	var size int64
	for name, v := range attrs {
		size += int64(len(name)) + valueSize(v)
	}
	return size
}

// valueSize follows DynamoDB's documented sizes: strings by UTF-8 length,
// binary by raw length, numbers about one byte per two digits plus one,
// maps and lists 3 bytes plus one per element plus their contents.
func valueSize(raw json.RawMessage) int64 {
	var v map[string]json.RawMessage
	if json.Unmarshal(raw, &v) != nil {
		return 0
	}
	for typ, x := range v {
		switch typ {
		case "S":
			var s string
			json.Unmarshal(x, &s)
			return int64(len(s))
		case "N":
			var s string
			json.Unmarshal(x, &s)
			return numberSize(s)
		case "B":
			var s string
			json.Unmarshal(x, &s)
			n, _ := base64.StdEncoding.DecodeString(s)
			return int64(len(n))
		case "BOOL", "NULL":
			return 1
		case "SS":
			var ss []string
			json.Unmarshal(x, &ss)
			var n int64
			for _, s := range ss {
				n += int64(len(s))
			}
			return n
		case "NS":
			var ss []string
			json.Unmarshal(x, &ss)
			var n int64
			for _, s := range ss {
				n += numberSize(s)
			}
			return n
		case "BS":
			var ss []string
			json.Unmarshal(x, &ss)
			var n int64
			for _, s := range ss {
				b, _ := base64.StdEncoding.DecodeString(s)
				n += int64(len(b))
			}
			return n
		case "M":
			var m map[string]json.RawMessage
			json.Unmarshal(x, &m)
			n := int64(3)
			for k, e := range m {
				n += 1 + int64(len(k)) + valueSize(e)
			}
			return n
		case "L":
			var l []json.RawMessage
			json.Unmarshal(x, &l)
			n := int64(3)
			for _, e := range l {
				n += 1 + valueSize(e)
			}
			return n
		}
	}
	return 0
}

func numberSize(s string) int64 {
	digits := 0
	for _, r := range s {
		if r >= '0' && r <= '9' {
			digits++
		}
	}
	return int64((digits+1)/2 + 1)
}

func init() {
	log.SetFlags(0)
	log.SetPrefix("awsproxy: ")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: awsproxy -dynamodb URL -s3 URL -addr-file FILE")
		flag.PrintDefaults()
	}
}
