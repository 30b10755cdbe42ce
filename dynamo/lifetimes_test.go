package dynamo

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver"
)

// txDB answers TransactWriteItems with answer, call by call, and records
// each request. Other calls panic through the nil embedded interface.
type txDB struct {
	DynamoAPI
	requests [][]types.TransactWriteItem
	answer   func(call int, items []types.TransactWriteItem) error
	// stored answers BatchGetItem, by sort key; gets counts the calls.
	stored map[string]item
	gets   int
}

// PutItem is recorded as a transaction of one put.
func (d *txDB) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	d.requests = append(d.requests, []types.TransactWriteItem{{Put: &types.Put{Item: in.Item, ConditionExpression: in.ConditionExpression,
		ExpressionAttributeNames: in.ExpressionAttributeNames, ExpressionAttributeValues: in.ExpressionAttributeValues}}})
	return &dynamodb.PutItemOutput{}, nil
}

func (d *txDB) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	d.gets++
	out := &dynamodb.BatchGetItemOutput{Responses: map[string][]item{}}
	for table, ka := range in.RequestItems {
		for _, k := range ka.Keys {
			if it, ok := d.stored[getS(k, attrSK)]; ok {
				out.Responses[table] = append(out.Responses[table], it)
			}
		}
	}
	return out, nil
}

func (d *txDB) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	d.requests = append(d.requests, in.TransactItems)
	if d.answer != nil {
		if err := d.answer(len(d.requests), in.TransactItems); err != nil {
			return nil, err
		}
	}
	return &dynamodb.TransactWriteItemsOutput{}, nil
}

// cancel returns the cancellation of a transaction whose conditions failed
// on the items at the given indexes, each returned as stored.
func cancel(n int, failed map[int]item) error {
	reasons := make([]types.CancellationReason, n)
	for i := range reasons {
		reasons[i].Code = ptr("None")
		if it, ok := failed[i]; ok {
			reasons[i] = types.CancellationReason{Code: ptr("ConditionalCheckFailed"), Item: it}
		}
	}
	return &types.TransactionCanceledException{CancellationReasons: reasons}
}

// describe renders a transaction's actions as "kind SK condition [update]",
// placeholders resolved, to compare requests as text.
func describe(items []types.TransactWriteItem) []string {
	var out []string
	resolve := func(s *string, names map[string]string, values item) string {
		if s == nil {
			return ""
		}
		with := map[string]string{}
		maps.Copy(with, names)
		for p, v := range values {
			switch v := v.(type) {
			case *types.AttributeValueMemberN:
				with[p] = v.Value
			case *types.AttributeValueMemberS:
				with[p] = "'" + v.Value + "'"
			case *types.AttributeValueMemberM:
				var fields []string
				for k, f := range v.Value {
					switch f := f.(type) {
					case *types.AttributeValueMemberN:
						fields = append(fields, k+"="+f.Value)
					case *types.AttributeValueMemberS:
						fields = append(fields, k+"="+f.Value)
					}
				}
				slices.Sort(fields)
				with[p] = "{" + strings.Join(fields, " ") + "}"
			}
		}
		// Longest first, so that #c1 never replaces the start of #c10.
		ps := slices.Collect(maps.Keys(with))
		slices.SortFunc(ps, func(a, b string) int { return len(b) - len(a) })
		text := *s
		for _, p := range ps {
			text = strings.ReplaceAll(text, p, with[p])
		}
		return text
	}
	for _, it := range items {
		switch {
		case it.ConditionCheck != nil:
			c := it.ConditionCheck
			out = append(out, fmt.Sprintf("check %s: %s", getS(c.Key, attrSK), resolve(c.ConditionExpression, c.ExpressionAttributeNames, c.ExpressionAttributeValues)))
		case it.Update != nil:
			u := it.Update
			out = append(out, fmt.Sprintf("update %s: %s: %s", getS(u.Key, attrSK), resolve(u.ConditionExpression, u.ExpressionAttributeNames, u.ExpressionAttributeValues),
				resolve(u.UpdateExpression, u.ExpressionAttributeNames, u.ExpressionAttributeValues)))
		case it.Put != nil:
			p := it.Put
			out = append(out, fmt.Sprintf("put %s: %s", getS(p.Item, attrSK), resolve(p.ConditionExpression, p.ExpressionAttributeNames, p.ExpressionAttributeValues)))
		}
	}
	return out
}

// put returns a put of checkpoint "2" at exp that brings channel "new" and
// references channels "a" and "b" at version 1.
func put(exp int64) saver.PutCheckpoint {
	in := saver.PutCheckpoint{Checkpoint: saver.Checkpoint{
		CheckpointRef:   saver.CheckpointRef{Tenant: "t", ThreadID: "th", ID: "2"},
		ParentID:        "1",
		Body:            saver.Typed{Type: "msgpack", Data: []byte("body")},
		Metadata:        saver.Metadata{},
		ChannelVersions: map[string]string{"a": "1", "b": "1", "new": "2"},
		ExpiresAt:       exp,
	}}
	in.Blobs = []saver.Blob{{Channel: "new", Version: "2", Value: saver.Typed{Type: "msgpack", Data: []byte("v")}}}
	return in
}

// Expressions the first request of a put sends.
const (
	inserted = "put b!!new!2!: attribute_not_exists(PK) OR expires_at <= 1000000"
	putCP    = "put c!!2!: "
	putNode  = "put n!!2!: " // the checkpoint's tree index item
	// The tombstone checks of the put's parent "1" and of its own id "2",
	// in the checkpoint's request (tombstone.go).
	notBuried1 = "check g!c!!1!: attribute_not_exists(PK) OR expires_at <= 1000000"
	notBuried2 = "check g!c!!2!: attribute_not_exists(PK) OR expires_at <= 1000000"
	vouchedA   = "(ch:a.v = '1' AND (ch:a.e = 0"
	vouchedB   = "(ch:b.v = '1' AND (ch:b.e = 0"
	recordNew  = "SET kind = 'lifetimes', ch:new = {e=%d h=TJRIXgwhrmxBzh3- v=2}" // h: contentHash("v")
)

// TestPutLifetimes checks the first request of puts: one update of the
// namespace's lifetimes item records the blobs brought and is conditioned
// on the entries of the blobs referenced.
func TestPutLifetimes(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	const exp = 1_003_600
	tests := []struct {
		name string
		in   func() saver.PutCheckpoint
		want []string
	}{
		{"DefaultPolicy", func() saver.PutCheckpoint { return put(0) }, []string{
			"update x!!: " + vouchedA + ")) AND " + vouchedB + ")): " + fmt.Sprintf(recordNew, 0) + " REMOVE expires_at",
			inserted, notBuried1, notBuried2, putCP, putNode,
		}},
		{"Expiring", func() saver.PutCheckpoint { return put(exp) }, []string{
			fmt.Sprintf("update x!!: %s OR ch:a.e >= %d)) AND %s OR ch:b.e >= %d)): "+recordNew+", expires_at = %d",
				vouchedA, exp, vouchedB, exp, 2*exp-now.Unix(), 2*exp-now.Unix()),
			inserted, notBuried1, notBuried2, putCP, putNode,
		}},
		{"NothingReferenced", func() saver.PutCheckpoint {
			in := put(exp)
			in.ChannelVersions = map[string]string{"new": "2"}
			return in
		}, []string{fmt.Sprintf("update x!!: : "+recordNew+", expires_at = %d", 2*exp-now.Unix(), 2*exp-now.Unix()), inserted, notBuried1, notBuried2, putCP, putNode}},
		{"NothingBroughtOrReferenced", func() saver.PutCheckpoint {
			in := put(exp)
			in.ChannelVersions, in.Blobs = map[string]string{}, nil
			return in
		}, []string{notBuried1, notBuried2, putCP, putNode}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := &txDB{}
			s := NewStore(db, "t")
			s.Now = func() time.Time { return now }
			if err := s.PutCheckpoint(t.Context(), tt.in()); err != nil {
				t.Fatal(err)
			}
			if len(db.requests) != 1 {
				t.Fatalf("%d requests, want 1", len(db.requests))
			}
			if diff := cmp.Diff(tt.want, describe(db.requests[0])); diff != "" {
				t.Fatalf("request mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPutLifetimesLeftOut puts 96 new blobs: with the checkpoint, its
// index item and its two tombstone checks they fill a transaction, so
// recording their entries would take a second one, and they are left out.
func TestPutLifetimesLeftOut(t *testing.T) {
	in := put(0)
	in.ChannelVersions, in.Blobs = map[string]string{}, nil
	for i := range 96 {
		ch := fmt.Sprint("ch", i)
		in.ChannelVersions[ch] = "1"
		in.Blobs = append(in.Blobs, saver.Blob{Channel: ch, Version: "1", Value: saver.Typed{Type: "msgpack"}})
	}
	db := &txDB{}
	if err := NewStore(db, "t").PutCheckpoint(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	if len(db.requests) != 1 || len(db.requests[0]) != 100 || db.requests[0][0].Put == nil {
		t.Fatalf("requests %d, first of %d items", len(db.requests), len(db.requests[0]))
	}
}

// TestPutExtends fails the conditions of a put's requests and checks the
// next ones: an entry that says too early gives the expiry to extend its
// blob from (after retagging its offloaded payload), a blob no entry vouches
// for is read, a blob the extension finds extended further is recorded as
// it is, and a new blob found stored is handled as referenced.
func TestPutExtends(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	const exp = 1_003_600
	blobExp := 2*exp - now.Unix()
	stored := func(sk string, exp int64, ref string) item {
		it := item{attrPK: attrS(partitionKey("t", "th")), attrSK: attrS(sk)}
		if exp != 0 {
			it[attrExpiresAt] = attrN(exp)
		}
		if ref != "" {
			it[attrValue] = refAttr("msgpack", ref)
		}
		return it
	}
	lifetimes := item{
		attrExpiresAt: attrN(now.Unix() + 10),
		"ch:a":        entryValue(blobRef{version: "1"}, now.Unix()+60), // too early: extend
		"ch:b":        entryValue(blobRef{version: "0"}, 0),             // another version: read
	}
	db := &txDB{
		answer: func(call int, items []types.TransactWriteItem) error {
			switch call {
			case 1:
				return cancel(len(items), map[int]item{0: lifetimes})
			case 2:
				// a was extended by another put meanwhile; new is stored.
				return cancel(len(items), map[int]item{1: stored("b!!a!1!", 0, ""), 3: stored("b!!new!2!", blobExp+5, "")})
			}
			return nil
		},
		stored: map[string]item{"b!!b!1!": stored("b!!b!1!", now.Unix()+30, "obj-b")},
	}
	off := &retagOffloader{}
	s := NewStore(db, "t")
	s.Offload = off
	s.Now = func() time.Time { return now }
	if err := s.PutCheckpoint(t.Context(), put(exp)); err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{
			fmt.Sprintf("update x!!: : "+recordNew+", ch:a = {e=%d v=1}, ch:b = {e=%d r=obj-b v=1}, expires_at = %d", blobExp, blobExp, blobExp, blobExp),
			fmt.Sprintf("update b!!a!1!: expires_at = %d: SET expires_at = %d", now.Unix()+60, blobExp),
			fmt.Sprintf("update b!!b!1!: expires_at = %d: SET expires_at = %d", now.Unix()+30, blobExp),
			inserted, notBuried1, notBuried2, putCP, putNode,
		},
		{
			fmt.Sprintf("update x!!: : SET kind = 'lifetimes', ch:a = {e=0 v=1}, ch:b = {e=%d r=obj-b v=1}, ch:new = {e=%d v=2}, expires_at = %d", blobExp, blobExp+5, blobExp),
			fmt.Sprintf("update b!!b!1!: expires_at = %d: SET expires_at = %d", now.Unix()+30, blobExp),
			notBuried1, notBuried2, putCP, putNode,
		},
	}
	if len(db.requests) != 3 {
		t.Fatalf("%d requests, want 3", len(db.requests))
	}
	for i, w := range want {
		if diff := cmp.Diff(w, describe(db.requests[i+1])); diff != "" {
			t.Fatalf("request %d mismatch (-want +got):\n%s", i+2, diff)
		}
	}
	if diff := cmp.Diff([]string{fmt.Sprint("obj-b@", blobExp)}, off.retags); diff != "" {
		t.Fatalf("retags mismatch (-want +got):\n%s", diff)
	}
	if db.gets != 1 {
		t.Fatalf("%d reads, want 1", db.gets)
	}
}

// TestPutGivesUp has another put extend the blob further each time, just
// first: the put gives up with EUNAVAILABLE after maxPutRounds requests.
func TestPutGivesUp(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	db := &txDB{answer: func(call int, items []types.TransactWriteItem) error {
		if call == 1 {
			return cancel(len(items), map[int]item{0: {"ch:a": entryValue(blobRef{version: "1"}, now.Unix()+1), "ch:b": entryValue(blobRef{version: "1"}, 0)}})
		}
		return cancel(len(items), map[int]item{1: {attrExpiresAt: attrN(now.Unix() + int64(call))}})
	}}
	s := NewStore(db, "t")
	s.Now = func() time.Time { return now }
	err := s.PutCheckpoint(t.Context(), put(now.Unix()+3600))
	if got := saver.ErrorCode(err); got != saver.EUNAVAILABLE || len(db.requests) != maxPutRounds {
		t.Fatalf("after %d requests: %v; want %s after %d", len(db.requests), err, saver.EUNAVAILABLE, maxPutRounds)
	}
}

// retagOffloader records Retag calls as "ref@expiry".
type retagOffloader struct {
	Offloader
	retags []string
}

func (o *retagOffloader) Offload(context.Context, string, string, []byte, int64) (string, error) {
	return "", nil
}

func (o *retagOffloader) Retag(_ context.Context, ref string, exp int64) error {
	o.retags = append(o.retags, fmt.Sprint(ref, "@", exp))
	return nil
}

func TestNodeFields(t *testing.T) {
	steps := []struct {
		v    any
		want int64
		ok   bool
	}{
		{int64(3), 3, true}, {3.9, 3, true}, {-1.0, -1, true}, {1e300, 0, false}, {"3", 0, false}, {nil, 0, false}, {true, 0, false},
	}
	for _, tt := range steps {
		if got, ok := nodeStep(tt.v); got != tt.want || ok != tt.ok {
			t.Errorf("nodeStep(%v) = %d, %v; want %d, %v", tt.v, got, ok, tt.want, tt.ok)
		}
	}
	parents := nodeParents(map[string]any{"": "p0", "n": int64(1), "l": []any{"x"}})
	if len(parents) != 1 || getS(parents, "") != "p0" {
		t.Errorf("nodeParents = %v", parents)
	}
	if got := nodeParents("p0"); len(got) != 0 {
		t.Errorf("nodeParents(string) = %v", got)
	}
}
