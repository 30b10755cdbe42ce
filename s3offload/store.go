// Package s3offload keeps checkpoint payloads too large for a DynamoDB item
// in S3, and sweeps away the objects no item points to.
//
// The dynamo store decides which payloads come here (by the size of the
// item that would hold them) and calls it through its dynamo.Offloader
// interface (wired in cmd/saver); this package stores and sweeps, and knows
// nothing of items. Ordering is the caller's
// half of the bargain: the object is written first and the item pointing at
// it last, so a crash in between leaves at worst an orphan object, which the
// Sweeper removes, and never an item pointing at nothing.
//
// Objects whose item expires are tagged "expires-at" (epoch seconds) and
// "ttl-days" (days from the write, rounded up), so a bucket lifecycle rule
// filtered on ttl-days can remove them even if no sweeper runs. When an
// item's expiry is extended its object's tags are too (Retag), never
// shortened.
package s3offload

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/saver-dev/saver/internal/awsx"
)

// S3API is the part of the S3 client the store uses. *s3.Client implements it.
type S3API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	CopyObject(ctx context.Context, in *s3.CopyObjectInput, optFns ...func(*s3.Options)) (*s3.CopyObjectOutput, error)
	DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	HeadBucket(ctx context.Context, in *s3.HeadBucketInput, optFns ...func(*s3.Options)) (*s3.HeadBucketOutput, error)
	GetObjectTagging(ctx context.Context, in *s3.GetObjectTaggingInput, optFns ...func(*s3.Options)) (*s3.GetObjectTaggingOutput, error)
	PutObjectTagging(ctx context.Context, in *s3.PutObjectTaggingInput, optFns ...func(*s3.Options)) (*s3.PutObjectTaggingOutput, error)
	DeleteObjectTagging(ctx context.Context, in *s3.DeleteObjectTaggingInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectTaggingOutput, error)
}

// maxDeleteObjects is S3's limit of keys per DeleteObjects request.
const maxDeleteObjects = 1000

// Store writes payloads to one bucket. Its methods are safe for concurrent use.
type Store struct {
	// Prefix starts every key, so that a bucket can be shared; "" or a
	// string ending in "/".
	Prefix string
	// Now is the clock for key periods, tags and the sweeper's grace.
	Now func() time.Time

	s3     S3API
	bucket string
}

// NewStore returns a store writing to bucket, which must exist.
func NewStore(client S3API, bucket string) *Store {
	return &Store{Now: time.Now, s3: client, bucket: bucket}
}

// Bucket returns the store's bucket.
func (s *Store) Bucket() string { return s.bucket }

// Ping checks that the bucket answers: the readiness probe.
func (s *Store) Ping(ctx context.Context) error {
	if _, err := s.s3.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &s.bucket}); err != nil {
		return fmt.Errorf("s3offload: ping %s: %w", s.bucket, awsx.S3Error(err))
	}
	return nil
}

// Offload writes data to S3 and returns the object's key. Writing the same
// data again within the hour writes the same key, so a retried put is
// idempotent. Which payloads come here is the dynamo store's decision.
func (s *Store) Offload(ctx context.Context, tenant, threadID string, data []byte, expiresAt int64) (string, error) {
	now := s.Now()
	key := s.objectKey(tenant, threadID, digest(data), now)
	in := &s3.PutObjectInput{
		Bucket:        &s.bucket,
		Key:           &key,
		Body:          bytes.NewReader(data),
		ContentLength: ptr(int64(len(data))),
		ContentType:   ptr("application/octet-stream"),
	}
	if tags := tagging(expiresAt, now); tags != "" {
		in.Tagging = &tags
	}
	if _, err := s.s3.PutObject(ctx, in); err != nil {
		return "", fmt.Errorf("s3offload: put %s: %w", key, awsx.S3Error(err))
	}
	return key, nil
}

// Load returns the data of an offloaded payload, checked against the hash
// in its key. A missing object is corrupt data (an item points at it), not
// a missing checkpoint: it comes back as EINTERNAL.
func (s *Store) Load(ctx context.Context, ref string) ([]byte, error) {
	name, ok := s.parseKey(ref)
	if !ok {
		return nil, fmt.Errorf("s3offload: load %q: not a key of this store", ref)
	}
	out, err := s.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &ref})
	if err != nil {
		return nil, fmt.Errorf("s3offload: load %s: %w", ref, awsx.S3Error(err))
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("s3offload: load %s: %w", ref, awsx.S3Error(err))
	}
	if digest(data) != name.sum {
		return nil, fmt.Errorf("s3offload: load %s: content does not match its hash", ref)
	}
	return data, nil
}

// Copy copies an object to a key of another thread, server-side, and
// returns the new key.
func (s *Store) Copy(ctx context.Context, ref, tenant, threadID string, expiresAt int64) (string, error) {
	name, ok := s.parseKey(ref)
	if !ok {
		return "", fmt.Errorf("s3offload: copy %q: not a key of this store", ref)
	}
	now := s.Now()
	key := s.objectKey(tenant, threadID, name.sum, now)
	in := &s3.CopyObjectInput{
		Bucket:           &s.bucket,
		Key:              &key,
		CopySource:       ptr(url.PathEscape(s.bucket) + "/" + escapeKey(ref)),
		TaggingDirective: types.TaggingDirectiveReplace,
	}
	if tags := tagging(expiresAt, now); tags != "" {
		in.Tagging = &tags
	}
	if _, err := s.s3.CopyObject(ctx, in); err != nil {
		return "", fmt.Errorf("s3offload: copy %s to %s: %w", ref, key, awsx.S3Error(err))
	}
	return key, nil
}

// Retag extends the expiry tags of an object whose item now lives until
// expiresAt (0: never): one GetObjectTagging, then a PutObjectTagging (or
// DeleteObjectTagging, for never) only if the object's tags say it may go
// sooner. It never shortens them, since objects are content-addressed and
// may be shared by items of the thread. ttl-days counts from the start of
// the object's period, before its write, so a lifecycle rule on it never
// removes the object before expiresAt.
func (s *Store) Retag(ctx context.Context, ref string, expiresAt int64) error {
	name, ok := s.parseKey(ref)
	if !ok {
		return fmt.Errorf("s3offload: retag %q: not a key of this store", ref)
	}
	out, err := s.s3.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: &s.bucket, Key: &ref})
	if err != nil {
		return fmt.Errorf("s3offload: retag %s: %w", ref, awsx.S3Error(err))
	}
	current := int64(0) // untagged: never expires
	for _, t := range out.TagSet {
		if deref(t.Key) == tagExpiresAt {
			current, _ = strconv.ParseInt(deref(t.Value), 10, 64)
		}
	}
	if current == 0 || (expiresAt != 0 && expiresAt <= current) {
		return nil
	}
	if expiresAt == 0 {
		_, err = s.s3.DeleteObjectTagging(ctx, &s3.DeleteObjectTaggingInput{Bucket: &s.bucket, Key: &ref})
	} else {
		t := tags(expiresAt, name.period)
		set := []types.Tag{
			{Key: ptr(tagExpiresAt), Value: ptr(t.Get(tagExpiresAt))},
			{Key: ptr(tagTTLDays), Value: ptr(t.Get(tagTTLDays))},
		}
		_, err = s.s3.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: &s.bucket, Key: &ref, Tagging: &types.Tagging{TagSet: set}})
	}
	if err != nil {
		return fmt.Errorf("s3offload: retag %s: %w", ref, awsx.S3Error(err))
	}
	return nil
}

// Delete removes objects, 1,000 per request. Missing ones are not an error.
func (s *Store) Delete(ctx context.Context, refs []string) error {
	for start := 0; start < len(refs); start += maxDeleteObjects {
		chunk := refs[start:min(start+maxDeleteObjects, len(refs))]
		ids := make([]types.ObjectIdentifier, len(chunk))
		for i := range chunk {
			ids[i] = types.ObjectIdentifier{Key: &chunk[i]}
		}
		out, err := s.s3.DeleteObjects(ctx, &s3.DeleteObjectsInput{
			Bucket: &s.bucket,
			Delete: &types.Delete{Objects: ids, Quiet: ptr(true)},
		})
		if err != nil {
			return fmt.Errorf("s3offload: delete %d objects: %w", len(chunk), awsx.S3Error(err))
		}
		for _, e := range out.Errors {
			if deref(e.Code) != "NoSuchKey" {
				return fmt.Errorf("s3offload: delete %s: %s: %s", deref(e.Key), deref(e.Code), deref(e.Message))
			}
		}
	}
	return nil
}

// DeleteThread removes every object of a thread.
func (s *Store) DeleteThread(ctx context.Context, tenant, threadID string) error {
	var keys []string
	err := s.list(ctx, s.threadPrefix(tenant, threadID), func(o types.Object) {
		keys = append(keys, deref(o.Key))
	})
	if err == nil {
		err = s.Delete(ctx, keys)
	}
	if err != nil {
		return fmt.Errorf("s3offload: delete thread %s: %w", threadID, err)
	}
	return nil
}

// list calls fn with every object under prefix.
func (s *Store) list(ctx context.Context, prefix string, fn func(types.Object)) error {
	in := &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &prefix}
	for {
		out, err := s.s3.ListObjectsV2(ctx, in)
		if err != nil {
			return fmt.Errorf("list %s: %w", prefix, awsx.S3Error(err))
		}
		for _, o := range out.Contents {
			fn(o)
		}
		if !deref(out.IsTruncated) || out.NextContinuationToken == nil {
			return nil
		}
		in.ContinuationToken = out.NextContinuationToken
	}
}

// Object tags.
const (
	tagExpiresAt = "expires-at"
	tagTTLDays   = "ttl-days"
)

// tagging returns the object tags for an item expiring at expiresAt (epoch
// seconds, 0 for never), in the URL-encoded form S3 takes.
func tagging(expiresAt int64, now time.Time) string {
	if expiresAt == 0 {
		return ""
	}
	return tags(expiresAt, now).Encode()
}

// tags returns the tags of an object written at written for an item
// expiring at expiresAt (not 0): ttl-days is counted from written.
func tags(expiresAt int64, written time.Time) url.Values {
	days := max(1, (expiresAt-written.Unix()+86399)/86400)
	return url.Values{
		tagExpiresAt: {strconv.FormatInt(expiresAt, 10)},
		tagTTLDays:   {strconv.FormatInt(days, 10)},
	}
}

// escapeKey URL-encodes a key for CopySource, keeping its slashes.
func escapeKey(key string) string {
	return (&url.URL{Path: key}).EscapedPath()
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
