package awsx

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// TestCounterCountsAttempts checks that a request the SDK retries counts
// once per attempt, and that the failed attempt is reported apart.
func TestCounterCountsAttempts(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"try again"}`))
			return
		}
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	c := NewCounter()
	db := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("k", "s", ""),
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = 3
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		}),
		APIOptions: []func(*middleware.Stack) error{c.Register},
	})
	_, err := db.GetItem(t.Context(), &dynamodb.GetItemInput{
		TableName: aws.String("t"),
		Key:       map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "p"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Snapshot()["GetItem"]; got != 2 {
		t.Errorf("GetItem attempts = %d, want 2", got)
	}
	if got := c.Failed()["GetItem"]; got != 1 {
		t.Errorf("failed GetItem attempts = %d, want 1", got)
	}
	c.Reset()
	if len(c.Snapshot()) != 0 || len(c.Failed()) != 0 {
		t.Errorf("after Reset: %v, %v", c.Snapshot(), c.Failed())
	}
}
