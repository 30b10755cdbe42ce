// Package localstack is test support for the DynamoDB and S3 stores: it
// connects to the local AWS stack that localstack/up.sh starts, creates a
// table and a bucket with random names for a test and removes them when the
// test ends.
//
// Endpoints come only from the standard AWS SDK variables
// (AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_S3, AWS_REGION, credentials),
// which up.sh writes to .cache/localstack/env. Tests skip when neither
// endpoint is set, unless SAVER_TEST_AWS=1 asks to run against real AWS with
// whatever the SDK resolves.
package localstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/saver-dev/saver/dynamo"
	"github.com/saver-dev/saver/s3offload"
)

// cleanupTimeout bounds the removal of a test's table or bucket; the test's
// own context is already cancelled when cleanups run.
const cleanupTimeout = time.Minute

// Enabled reports whether an AWS stack to test against is configured.
func Enabled() bool {
	return os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") != "" || os.Getenv("AWS_ENDPOINT_URL_S3") != "" ||
		os.Getenv("SAVER_TEST_AWS") == "1"
}

// MustConfig returns the SDK config from the environment, skipping the test
// when no stack is configured.
func MustConfig(tb testing.TB) aws.Config {
	tb.Helper()
	if !Enabled() {
		tb.Skip("no local AWS stack: run localstack/up.sh and source .cache/localstack/env (or make test-integration)")
	}
	cfg, err := config.LoadDefaultConfig(tb.Context())
	if err != nil {
		tb.Fatalf("load AWS config: %v", err)
	}
	return cfg
}

// Name returns prefix followed by a random suffix, valid as a table and a
// bucket name.
func Name(prefix string) string {
	b := make([]byte, 6)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// MustTable creates a table with a random name through store's own
// CreateTable and deletes it when the test ends. db must be the client the
// store was made with.
func MustTable(tb testing.TB, db *dynamodb.Client, counter *dynamo.Counter) *dynamo.Store {
	tb.Helper()
	table := Name("saver-test-")
	store := dynamo.NewStore(db, table)
	if err := store.CreateTable(tb.Context()); err != nil {
		tb.Fatalf("create table %s: %v", table, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if _, err := db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &table}); err != nil {
			tb.Errorf("delete table %s: %v", table, err)
		}
	})
	if counter != nil {
		counter.Reset() // count the test's requests, not the setup's
	}
	return store
}

// MustBucket creates a bucket with a random name and, when the test ends,
// empties and deletes it.
func MustBucket(tb testing.TB, client *s3.Client) string {
	tb.Helper()
	bucket := Name("saver-test-")
	if _, err := client.CreateBucket(tb.Context(), &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		tb.Fatalf("create bucket %s: %v", bucket, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := deleteBucket(ctx, client, bucket); err != nil {
			tb.Errorf("delete bucket %s: %v", bucket, err)
		}
	})
	return bucket
}

func deleteBucket(ctx context.Context, client *s3.Client, bucket string) error {
	p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: &bucket})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return err
		}
		if len(page.Contents) == 0 {
			continue
		}
		ids := make([]s3types.ObjectIdentifier, len(page.Contents))
		for i, o := range page.Contents {
			ids[i] = s3types.ObjectIdentifier{Key: o.Key}
		}
		if _, err := client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &bucket, Delete: &s3types.Delete{Objects: ids}}); err != nil {
			return err
		}
	}
	_, err := client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &bucket})
	return err
}

// Stack is a dynamo store with S3 offload on a fresh table and bucket, wired
// as cmd/saver wires them, with the clients and request counters behind it.
type Stack struct {
	Store   *dynamo.Store
	Offload *s3offload.Store
	Sweeper *s3offload.Sweeper

	DB *dynamodb.Client
	S3 *s3.Client
	// DBRequests and S3Requests count the requests of DB and S3.
	DBRequests *dynamo.Counter
	S3Requests *dynamo.Counter
}

// Objects returns the keys in the stack's bucket, sorted.
func (st *Stack) Objects(tb testing.TB) []string {
	tb.Helper()
	var keys []string
	bucket := st.Offload.Bucket()
	p := s3.NewListObjectsV2Paginator(st.S3, &s3.ListObjectsV2Input{Bucket: &bucket})
	for p.HasMorePages() {
		page, err := p.NextPage(tb.Context())
		if err != nil {
			tb.Fatalf("list bucket %s: %v", bucket, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, *o.Key)
		}
	}
	slices.Sort(keys)
	return keys
}

// MustStore returns a new Stack, skipping the test when no AWS stack is
// configured. The table and bucket are removed when the test ends.
func MustStore(tb testing.TB) *Stack {
	tb.Helper()
	cfg := MustConfig(tb)
	st := &Stack{DBRequests: dynamo.NewCounter(), S3Requests: dynamo.NewCounter()}
	st.DB = dynamo.NewClient(cfg, st.DBRequests)
	st.S3 = s3offload.NewClient(cfg, st.S3Requests.Register)
	st.Offload = s3offload.NewStore(st.S3, MustBucket(tb, st.S3))
	st.Store = MustTable(tb, st.DB, st.DBRequests)
	st.Store.Offload = st.Offload
	st.Sweeper = s3offload.NewSweeper(st.Offload, st.Store)
	st.S3Requests.Reset()
	return st
}
