package s3offload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver"
)

// fakeS3 is an in-memory bucket with the calls the store makes. Listings
// come two objects a page, so paging is exercised.
type fakeS3 struct {
	mu      sync.Mutex
	objects map[string]fakeObject
	now     func() time.Time
}

type fakeObject struct {
	data     []byte
	modified time.Time
	tagging  string
}

func newFakeS3(now func() time.Time) *fakeS3 {
	return &fakeS3{objects: map[string]fakeObject{}, now: now}
}

func (f *fakeS3) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	data, _ := io.ReadAll(in.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objects[*in.Key] = fakeObject{data: data, modified: f.now(), tagging: deref(in.Tagging)}
	return &s3.PutObjectOutput{}, nil
}

func (f *fakeS3) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.objects[*in.Key]
	if !ok {
		return nil, &types.NoSuchKey{}
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(o.data))}, nil
}

func (f *fakeS3) CopyObject(_ context.Context, in *s3.CopyObjectInput, _ ...func(*s3.Options)) (*s3.CopyObjectOutput, error) {
	src, _ := url.PathUnescape(*in.CopySource)
	_, key, _ := strings.Cut(src, "/")
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.objects[key]
	if !ok {
		return nil, &types.NoSuchKey{}
	}
	f.objects[*in.Key] = fakeObject{data: o.data, modified: f.now(), tagging: deref(in.Tagging)}
	return &s3.CopyObjectOutput{}, nil
}

func (f *fakeS3) DeleteObjects(_ context.Context, in *s3.DeleteObjectsInput, _ ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error) {
	if len(in.Delete.Objects) > maxDeleteObjects {
		return nil, errors.New("too many keys")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, o := range in.Delete.Objects {
		delete(f.objects, *o.Key)
	}
	return &s3.DeleteObjectsOutput{}, nil
}

func (f *fakeS3) ListObjectsV2(_ context.Context, in *s3.ListObjectsV2Input, _ ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var keys []string
	for k := range f.objects {
		if strings.HasPrefix(k, deref(in.Prefix)) && k > deref(in.ContinuationToken) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	out := &s3.ListObjectsV2Output{}
	for i, k := range keys {
		if i == 2 {
			out.IsTruncated, out.NextContinuationToken = ptr(true), ptr(keys[1])
			break
		}
		o := f.objects[k]
		out.Contents = append(out.Contents, types.Object{Key: ptr(k), LastModified: ptr(o.modified)})
	}
	return out, nil
}

func (f *fakeS3) HeadBucket(context.Context, *s3.HeadBucketInput, ...func(*s3.Options)) (*s3.HeadBucketOutput, error) {
	return &s3.HeadBucketOutput{}, nil
}

func (f *fakeS3) GetObjectTagging(_ context.Context, in *s3.GetObjectTaggingInput, _ ...func(*s3.Options)) (*s3.GetObjectTaggingOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.objects[*in.Key]
	if !ok {
		return nil, &types.NoSuchKey{}
	}
	values, _ := url.ParseQuery(o.tagging)
	out := &s3.GetObjectTaggingOutput{}
	for k := range values {
		out.TagSet = append(out.TagSet, types.Tag{Key: ptr(k), Value: ptr(values.Get(k))})
	}
	return out, nil
}

func (f *fakeS3) PutObjectTagging(_ context.Context, in *s3.PutObjectTaggingInput, _ ...func(*s3.Options)) (*s3.PutObjectTaggingOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.objects[*in.Key]
	if !ok {
		return nil, &types.NoSuchKey{}
	}
	values := url.Values{}
	for _, t := range in.Tagging.TagSet {
		values.Set(*t.Key, *t.Value)
	}
	o.tagging = values.Encode()
	f.objects[*in.Key] = o
	return &s3.PutObjectTaggingOutput{}, nil
}

func (f *fakeS3) DeleteObjectTagging(_ context.Context, in *s3.DeleteObjectTaggingInput, _ ...func(*s3.Options)) (*s3.DeleteObjectTaggingOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.objects[*in.Key]
	if !ok {
		return nil, &types.NoSuchKey{}
	}
	o.tagging = ""
	f.objects[*in.Key] = o
	return &s3.DeleteObjectTaggingOutput{}, nil
}

func (f *fakeS3) keys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for k := range f.objects {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newTestStore() (*Store, *fakeS3, *clock) {
	c := &clock{t: time.Date(2026, 3, 1, 10, 30, 0, 0, time.UTC)}
	f := newFakeS3(c.Now)
	s := NewStore(f, "bucket")
	s.Prefix = "saver/"
	s.Now = c.Now
	return s, f, c
}

func TestOffload(t *testing.T) {
	s, f, _ := newTestStore()
	ctx := t.Context()
	data := []byte("payload")
	ref, err := s.Offload(ctx, "t", "th", data, 0)
	if err != nil || ref == "" {
		t.Fatalf("offload: ref %q, err %v", ref, err)
	}
	again, err := s.Offload(ctx, "t", "th", data, 0)
	if err != nil || again != ref {
		t.Fatalf("second offload of the same data: %q, %v; want %q (idempotent)", again, err, ref)
	}
	if got := f.keys(); len(got) != 1 || got[0] != ref {
		t.Fatalf("objects %v, want [%s]", got, ref)
	}
	if !strings.HasPrefix(ref, s.threadPrefix("t", "th")) || !strings.HasSuffix(ref, digest(data)) {
		t.Fatalf("key %q is not under the thread or not content-addressed", ref)
	}
	if got, err := s.Load(ctx, ref); err != nil || string(got) != "payload" {
		t.Fatalf("Load = %q, %v", got, err)
	}
}

func TestOffloadTags(t *testing.T) {
	s, f, c := newTestStore()
	exp := c.Now().Add(36 * time.Hour).Unix()
	ref, err := s.Offload(t.Context(), "t", "th", []byte("x"), exp)
	if err != nil {
		t.Fatal(err)
	}
	tags, _ := url.ParseQuery(f.objects[ref].tagging)
	if tags.Get("ttl-days") != "2" || tags.Get("expires-at") == "" {
		t.Fatalf("tags %v, want ttl-days=2 and expires-at", tags)
	}
	ref, _ = s.Offload(t.Context(), "t", "th", []byte("y"), 0)
	if f.objects[ref].tagging != "" {
		t.Fatalf("object without expiry tagged %q", f.objects[ref].tagging)
	}
}

// TestRetag extends an object's expiry tags and checks that they only ever
// grow: a later expiry replaces them, an earlier one does not, never (0)
// removes them, and an untagged object stays untagged.
func TestRetag(t *testing.T) {
	s, f, c := newTestStore()
	ctx := t.Context()
	written := c.Now()
	period := written.Truncate(time.Hour).Unix() // 10:00, the object's period
	exp := written.Unix() + 3600
	ref, err := s.Offload(ctx, "t", "th", []byte("payload"), exp)
	if err != nil {
		t.Fatal(err)
	}
	tagsOf := func() url.Values {
		t.Helper()
		v, err := url.ParseQuery(f.objects[ref].tagging)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	c.Add(48 * time.Hour) // retags happen long after the write
	steps := []struct {
		name      string
		expiresAt int64
		want      url.Values
	}{
		{"Later", period + 3*86400 + 1, url.Values{"expires-at": {fmt.Sprint(period + 3*86400 + 1)}, "ttl-days": {"4"}}},
		{"Earlier", exp, url.Values{"expires-at": {fmt.Sprint(period + 3*86400 + 1)}, "ttl-days": {"4"}}},
		{"Never", 0, url.Values{}},
		{"AfterNever", period + 10*86400, url.Values{}},
	}
	for _, st := range steps {
		if err := s.Retag(ctx, ref, st.expiresAt); err != nil {
			t.Fatalf("%s: Retag: %v", st.name, err)
		}
		if got := tagsOf(); !cmp.Equal(got, st.want) {
			t.Fatalf("%s: tags %v, want %v", st.name, got, st.want)
		}
	}
	if err := s.Retag(ctx, "other/x", 1); err == nil {
		t.Fatal("Retag of a foreign key succeeded")
	}
}

func TestKeys(t *testing.T) {
	s, _, c := newTestStore()
	tests := []struct{ tenant, thread string }{
		{"", "t"},
		{"acme", "a/b/../c"},
		{"a/b", "_"},
		{"ünï", "thread with spaces %2F"},
	}
	for _, tt := range tests {
		key := s.objectKey(tt.tenant, tt.thread, digest(nil), c.Now())
		name, ok := s.parseKey(key)
		if !ok || name.tenant != tt.tenant || name.threadID != tt.thread || !name.period.Equal(c.Now().Truncate(time.Hour)) {
			t.Errorf("parseKey(%q) = %+v, %v", key, name, ok)
		}
	}
	for _, foreign := range []string{"other/x", "saver/a/b/c", "saver/YQ/Yg/notanumber/" + digest(nil), "saver/YQ/Yg/1/short"} {
		if _, ok := s.parseKey(foreign); ok {
			t.Errorf("parseKey(%q) accepted a key the store did not make", foreign)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	s, f, _ := newTestStore()
	ref, _ := s.Offload(t.Context(), "t", "th", []byte("x"), 0)
	f.objects[ref] = fakeObject{data: []byte("tampered")}
	if _, err := s.Load(t.Context(), ref); err == nil {
		t.Fatal("Load of a tampered object succeeded")
	}
	delete(f.objects, ref)
	_, err := s.Load(t.Context(), ref)
	// An item points at it, so a missing object is corrupt data, not a 404.
	if got := saver.ErrorCode(err); got != saver.EINTERNAL {
		t.Fatalf("Load of a missing object: code %q (%v), want %q", got, err, saver.EINTERNAL)
	}
}

func TestCopyAndDeleteThread(t *testing.T) {
	s, f, _ := newTestStore()
	ctx := t.Context()
	var refs []string
	for _, d := range []string{"a", "b", "c"} {
		ref, _ := s.Offload(ctx, "t", "src", []byte(d), 0)
		refs = append(refs, ref)
	}
	other, _ := s.Offload(ctx, "t", "other", []byte("a"), 0)
	copied, err := s.Copy(ctx, refs[0], "t", "dst", 0)
	if err != nil || !strings.HasPrefix(copied, s.threadPrefix("t", "dst")) {
		t.Fatalf("Copy = %q, %v", copied, err)
	}
	if err := s.DeleteThread(ctx, "t", "src"); err != nil {
		t.Fatal(err)
	}
	if got, want := f.keys(), []string{copied, other}; !slices.Equal(got, sorted(want)) {
		t.Fatalf("objects left %v, want %v", got, want)
	}
	if got, err := s.Load(ctx, copied); err != nil || string(got) != "a" {
		t.Fatalf("copy reads %q, %v", got, err)
	}
}

func sorted(s []string) []string { slices.Sort(s); return s }

// refsFunc is a Referrer from a function.
type refsFunc func(tenant, threadID string) []string

func (f refsFunc) OffloadRefs(_ context.Context, tenant, threadID string) ([]string, error) {
	return f(tenant, threadID), nil
}

// TestSweepRemovesOrphansOnly puts live and orphan objects in old and current
// periods and checks that a sweep deletes exactly the old orphans.
func TestSweepRemovesOrphansOnly(t *testing.T) {
	s, f, c := newTestStore()
	ctx := t.Context()
	put := func(thread, data string) string {
		ref, err := s.Offload(ctx, "t", thread, []byte(data), 0)
		if err != nil {
			t.Fatal(err)
		}
		return ref
	}
	live := map[string]bool{}
	oldLive, oldOrphan := put("a", "live"), put("a", "orphan")
	goneThread := put("gone", "x") // a thread deleted from DynamoDB by TTL
	live[oldLive] = true
	c.Add(3 * time.Hour)
	newOrphan := put("a", "fresh orphan") // its period is still open
	newLive := put("b", "fresh live")
	live[newLive] = true
	foreign := "elsewhere/not-ours"
	f.objects[foreign] = fakeObject{modified: time.Unix(0, 0)}

	sw := NewSweeper(s, refsFunc(func(tenant, thread string) []string {
		var out []string
		for k := range live {
			if strings.HasPrefix(k, s.threadPrefix(tenant, thread)) {
				out = append(out, k)
			}
		}
		return out
	}))
	res, err := sw.Sweep(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := f.keys(), sorted([]string{oldLive, newOrphan, newLive, foreign}); !slices.Equal(got, want) {
		t.Fatalf("objects left %v, want %v", got, want)
	}
	if res.Deleted != 2 || res.Threads != 2 {
		t.Fatalf("result %+v, want 2 deleted in 2 threads (%s, %s)", res, oldOrphan, goneThread)
	}

	// Once the fresh orphan's period has closed and grace passed, it goes too.
	c.Add(2 * time.Hour)
	if _, err := sw.Sweep(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, want := f.keys(), sorted([]string{oldLive, newLive, foreign}); !slices.Equal(got, want) {
		t.Fatalf("objects left %v, want %v", got, want)
	}
}

// TestSweepGrace checks that an object in a period that closed less than
// grace ago is left alone even with no reference.
func TestSweepGrace(t *testing.T) {
	s, f, c := newTestStore()
	ref, _ := s.Offload(t.Context(), "t", "th", []byte("x"), 0)
	c.Add(time.Hour) // the period closed 30 minutes ago
	sw := NewSweeper(s, refsFunc(func(string, string) []string { return nil }))
	if _, err := sw.Sweep(t.Context(), time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := f.keys(); !slices.Equal(got, []string{ref}) {
		t.Fatalf("objects left %v, want [%s]", got, ref)
	}
}
