package faults_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver/dynamo"
	"github.com/saver-dev/saver/faults"
)

func TestParse(t *testing.T) {
	tests := []struct {
		spec  string
		rules []faults.Rule
		delay map[string]time.Duration
		seed  uint64
	}{
		{"", nil, map[string]time.Duration{}, 0},
		{"dynamodb:throttle=0.3", []faults.Rule{{Service: "dynamodb", Fault: faults.Throttle, Rate: 0.3}}, map[string]time.Duration{}, 0},
		{
			" dynamodb:throttle=0.2,provisioned=0.1,error=0.05,seed=7 ; s3:unavailable=1,count=2,skip=3,op=PUT,delay=20ms",
			[]faults.Rule{
				{Service: "dynamodb", Fault: faults.Throttle, Rate: 0.2},
				{Service: "dynamodb", Fault: faults.Provisioned, Rate: 0.1},
				{Service: "dynamodb", Fault: faults.ServerError, Rate: 0.05},
				{Service: "s3", Op: "PUT", Fault: faults.Unavailable, Rate: 1, Skip: 3, Count: 2},
			},
			map[string]time.Duration{"s3": 20 * time.Millisecond}, 7,
		},
		{"dynamodb:down=1", []faults.Rule{{Service: "dynamodb", Fault: faults.Down, Rate: 1}}, map[string]time.Duration{}, 0},
		{"dynamodb:conflict=0.3,unprocessed=0.5", []faults.Rule{
			{Service: "dynamodb", Fault: faults.Conflict, Rate: 0.3},
			{Service: "dynamodb", Fault: faults.Unprocessed, Rate: 0.5},
		}, map[string]time.Duration{}, 0},
	}
	for _, tt := range tests {
		got, err := faults.Parse(tt.spec)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.spec, err)
		}
		want := faults.Spec{Rules: tt.rules, Delay: tt.delay, Seed: tt.seed}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tt.spec, diff)
		}
	}
	for _, bad := range []string{
		"throttle=0.3", "sqs:throttle=1", "dynamodb:throttle", "dynamodb:throttle=1.5",
		"dynamodb:throttle=-1", "dynamodb:slow=1", "dynamodb:count=-1", "dynamodb:delay=soon",
	} {
		if _, err := faults.Parse(bad); err == nil {
			t.Errorf("Parse(%q): no error", bad)
		}
	}
}

// countingBase answers every request 200 {} (a successful DynamoDB write) and
// counts what reached it.
type countingBase struct{ n atomic.Int64 }

func (b *countingBase) RoundTrip(req *http.Request) (*http.Response, error) {
	b.n.Add(1)
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{
		StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body:    io.NopCloser(strings.NewReader("{}")),
		Request: req,
	}, nil
}

func dynamoRequest(t *testing.T, op string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://dynamodb.invalid/", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	return req
}

func TestTransportFirstN(t *testing.T) {
	base := &countingBase{}
	ft := faults.New(base, faults.Rule{Service: faults.DynamoDB, Fault: faults.Throttle, Rate: 1, Count: 3})
	var statuses []int
	for range 5 {
		resp, err := ft.RoundTrip(dynamoRequest(t, "PutItem"))
		if err != nil {
			t.Fatal(err)
		}
		statuses = append(statuses, resp.StatusCode)
		resp.Body.Close()
	}
	if diff := cmp.Diff([]int{400, 400, 400, 200, 200}, statuses); diff != "" {
		t.Fatalf("statuses (-want +got):\n%s", diff)
	}
	if got := base.n.Load(); got != 2 {
		t.Fatalf("%d requests reached the service, want 2", got)
	}
	st := ft.Stats()
	if st.Requests["dynamodb"] != 5 || st.Injected["dynamodb:throttle"] != 3 || st.Total() != 3 {
		t.Fatalf("stats %+v", st)
	}
}

func TestTransportRateOpAndSkip(t *testing.T) {
	base := &countingBase{}
	ft := faults.New(base,
		faults.Rule{Service: faults.DynamoDB, Op: "TransactWriteItems", Fault: faults.ServerError, Rate: 1, Skip: 1},
		faults.Rule{Service: faults.DynamoDB, Fault: faults.Throttle, Rate: 0.3},
	).Seed(42)
	const n = 4000
	for range n {
		resp, err := ft.RoundTrip(dynamoRequest(t, "Query"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	got := ft.Stats().Injected["dynamodb:throttle"]
	if got < n*25/100 || got > n*35/100 {
		t.Fatalf("rate 0.3 faulted %d of %d", got, n)
	}
	// The op rule skips the first TransactWriteItems, then faults every one.
	var statuses []int
	for range 3 {
		resp, _ := ft.RoundTrip(dynamoRequest(t, "TransactWriteItems"))
		statuses = append(statuses, resp.StatusCode)
		resp.Body.Close()
	}
	if statuses[1] != 500 || statuses[2] != 500 {
		t.Fatalf("TransactWriteItems statuses %v, want the 2nd and 3rd 500", statuses)
	}
	ft.Clear()
	before := base.n.Load()
	for range 100 {
		resp, _ := ft.RoundTrip(dynamoRequest(t, "Query"))
		resp.Body.Close()
	}
	if base.n.Load()-before != 100 {
		t.Fatal("requests faulted after Clear")
	}
}

// offlineConfig is an SDK config that never leaves the process: the faults
// transport and countingBase answer everything.
func offlineConfig() aws.Config {
	return aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String("http://dynamodb.invalid"),
	}
}

// TestSDKDecodesFaults checks that the SDK reads every injected answer as the
// error the real service's answer would be, and classifies it the same way.
func TestSDKDecodesFaults(t *testing.T) {
	tests := []struct {
		fault    faults.Fault
		check    func(error) bool
		throttle bool
	}{
		{faults.Throttle, func(err error) bool {
			var e smithy.APIError
			return errors.As(err, &e) && e.ErrorCode() == "ThrottlingException"
		}, true},
		{faults.Provisioned, func(err error) bool {
			var e *types.ProvisionedThroughputExceededException
			return errors.As(err, &e)
		}, true},
		{faults.ServerError, func(err error) bool {
			var e *types.InternalServerError
			return errors.As(err, &e)
		}, false},
		{faults.Down, func(err error) bool { return strings.Contains(err.Error(), "connection refused") }, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.fault), func(t *testing.T) {
			ft := faults.New(&countingBase{}, faults.Rule{Service: faults.DynamoDB, Fault: tt.fault, Rate: 1})
			db := faultyClient(offlineConfig(), ft, nil, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
			_, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("t"), Item: map[string]types.AttributeValue{
				"PK": &types.AttributeValueMemberS{Value: "a"}, "SK": &types.AttributeValueMemberS{Value: "b"},
			}})
			if err == nil || !tt.check(err) {
				t.Fatalf("PutItem error %v does not look like a real %s", err, tt.fault)
			}
		})
	}
}

// TestRetriesSucceed: the store's SDK retryer absorbs fewer failures than its
// attempts, invisibly to the API's caller. Offline: the writes land in a
// service that answers 200.
func TestRetriesSucceed(t *testing.T) {
	for _, fault := range []faults.Fault{faults.Throttle, faults.Provisioned, faults.ServerError, faults.Unavailable, faults.Down} {
		t.Run(string(fault), func(t *testing.T) {
			base := &countingBase{}
			ft := faults.New(base, faults.Rule{Service: faults.DynamoDB, Fault: fault, Rate: 1, Count: dynamo.MaxAttempts - 1})
			store := dynamo.NewStore(faultyClient(offlineConfig(), ft, nil, fastRetries), "saver")
			api := service(t, store)
			a := api.put("t", checkpointBody("0001", "", 3, 10))
			mustStatus(t, "put", a, http.StatusOK)
			st := ft.Stats()
			if st.Requests["dynamodb"] != dynamo.MaxAttempts || st.Total() != dynamo.MaxAttempts-1 || base.n.Load() != 1 {
				t.Fatalf("requests %v injected %v reached the service %d; want %d tries, the last one through",
					st.Requests, st.Injected, base.n.Load(), dynamo.MaxAttempts)
			}
			t.Logf("%s: %d faults injected, survived: put answered 200 after %d tries", fault, st.Total(), st.Requests["dynamodb"])
		})
	}
}

// TestRetriesExhausted: when every try fails, the API answers 503 with
// Retry-After, and nothing reached the service.
func TestRetriesExhausted(t *testing.T) {
	for _, fault := range []faults.Fault{faults.Throttle, faults.Provisioned, faults.ServerError, faults.Unavailable, faults.Down} {
		t.Run(string(fault), func(t *testing.T) {
			base := &countingBase{}
			ft := faults.New(base, faults.Rule{Service: faults.DynamoDB, Fault: fault, Rate: 1})
			store := dynamo.NewStore(faultyClient(offlineConfig(), ft, nil, fastRetries), "saver")
			api := service(t, store)
			mustUnavailable(t, "put", api.put("t", checkpointBody("0001", "", 3, 10)))
			mustUnavailable(t, "writes", api.writes("t", writesBody("0001", "task", 3, 10)))
			mustUnavailable(t, "get", api.get("t", ""))
			mustUnavailable(t, "list", api.list("t"))
			if n := base.n.Load(); n != 0 {
				t.Fatalf("%d requests reached the service", n)
			}
			if got := ft.Stats().Requests["dynamodb"]; got != 4*dynamo.MaxAttempts {
				t.Fatalf("%d DynamoDB requests for 4 API calls, want %d (every try of each)", got, 4*dynamo.MaxAttempts)
			}
		})
	}
}

// FuzzParse: whatever SAVER_FAULTS holds, Parse returns an error or rules the
// transport can use, never panics.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"dynamodb:throttle=0.3", "s3:error=1,count=2,skip=1,op=PUT;dynamodb:delay=5ms,seed=3",
		"dynamodb:throttle=1.5", ";;", "dynamodb:", "s3:down=0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := faults.Parse(spec)
		if err != nil {
			return
		}
		for _, r := range s.Rules {
			if !(r.Rate >= 0 && r.Rate <= 1) || r.Skip < 0 || r.Count < 0 || (r.Service != faults.DynamoDB && r.Service != faults.S3) {
				t.Fatalf("Parse(%q) gave a bad rule %+v", spec, r)
			}
		}
		s.Transport(&countingBase{}).Stats()
	})
}
