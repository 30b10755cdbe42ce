package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/saver-dev/saver/api"
	"github.com/saver-dev/saver/dynamo"
	"github.com/saver-dev/saver/s3offload"
)

// awsStore is the production store: DynamoDB with payloads over the offload
// threshold in S3. DB serves the API, with the capabilities it is wired
// with (capabilities).
type awsStore struct {
	DB        *dynamo.Store
	Offload   *s3offload.Store // nil without a bucket
	Counter   *dynamo.Counter  // DynamoDB requests by operation
	S3Counter *dynamo.Counter  // S3 requests by operation (same middleware)
	s3        *s3.Client
}

// openAWS builds the clients from the standard AWS configuration chain
// (AWS_REGION, credentials, AWS_ENDPOINT_URL_DYNAMODB / _S3 for a local
// stack), so the same binary runs against AWS or the emulators unchanged.
func openAWS(ctx context.Context, c Config, logger *slog.Logger) (*awsStore, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	if err := injectFaults(&cfg, logger); err != nil { // test-only, off unless SAVER_FAULTS is set
		return nil, err
	}
	st := &awsStore{Counter: dynamo.NewCounter(), S3Counter: dynamo.NewCounter()}
	st.DB = dynamo.NewStore(dynamo.NewClient(cfg, st.Counter), c.Table)
	st.DB.RememberValues(c.PatchCache)
	st.DB.RememberChains(c.ChainCache)
	st.DB.TombstoneLifetime = c.TombstoneLifetime
	if c.Bucket != "" {
		st.s3 = s3offload.NewClient(cfg, st.S3Counter.Register)
		st.Offload = s3offload.NewStore(st.s3, c.Bucket)
		st.DB.Offload = st.Offload
		st.DB.OffloadThreshold = c.OffloadBytes
	} else {
		logger.Warn("no SAVER_BUCKET: payloads over the DynamoDB item limit will be refused (413)")
	}
	return st, nil
}

// capabilities are what the production store offers beyond saver.Store:
// the dynamo store's tree, ledger, expiry, items and conditional puts, and a
// readiness probe of the table and the bucket.
func (s *awsStore) capabilities() api.Capabilities {
	return api.Capabilities{Tree: s.DB, Ledger: s.DB, Expirer: s.DB, Items: s.DB, Pinger: s, HeadGuard: true}
}

// Ping checks the table and, with offload, the bucket: the readiness probe.
func (s *awsStore) Ping(ctx context.Context) error {
	if err := s.DB.Ping(ctx); err != nil {
		return err
	}
	if s.Offload != nil {
		return s.Offload.Ping(ctx)
	}
	return nil
}

// Close releases nothing: the SDK clients hold only idle connections.
func (s *awsStore) Close() error { return nil }

// Init creates the table (TTL on) and the bucket if they are missing.
// Existing ones are left as they are, so running it twice is harmless.
func (s *awsStore) Init(ctx context.Context) error {
	if err := s.DB.CreateTable(ctx); err != nil {
		return err
	}
	if s.Offload == nil {
		return nil
	}
	bucket := s.Offload.Bucket()
	if _, err := s.s3.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &bucket}); err == nil {
		return nil
	}
	_, err := s.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket, CreateBucketConfiguration: bucketLocation(s.s3)})
	var owned *s3types.BucketAlreadyOwnedByYou
	if err != nil && !errors.As(err, &owned) {
		return fmt.Errorf("create bucket %s: %w", bucket, err)
	}
	return nil
}

// bucketLocation names the region for CreateBucket; us-east-1 must not be named.
func bucketLocation(c *s3.Client) *s3types.CreateBucketConfiguration {
	region := c.Options().Region
	if region == "" || region == "us-east-1" {
		return nil
	}
	return &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(region)}
}

// sweeper returns the offload sweeper, or nil without a bucket.
func (s *awsStore) sweeper() *s3offload.Sweeper {
	if s.Offload == nil {
		return nil
	}
	return s3offload.NewSweeper(s.Offload, s.DB)
}
