package dynamo

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver"
)

// queryDB is txDB answering every Query with items.
type queryDB struct {
	*txDB
	items []item
}

func (d *queryDB) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return &dynamodb.QueryOutput{Items: d.items}, nil
}

// TestSetExpiryExtends checks SetExpiry's requests: its blob and write that
// expire too early are extended (their payloads retagged first, once), the
// lifetimes entry of the blob extended says so, a blob that never expires is
// left alone, and an extension that fails because another writer extended
// the blob further is dropped, with its entry, from the next request.
func TestSetExpiryExtends(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	exp := now.Unix() + 3600
	pk := attrS(partitionKey("t", "th"))
	with := func(sk string, exp int64, ref string) item {
		it := item{attrPK: pk, attrSK: attrS(sk), attrChannel: attrS(""), attrVersion: attrS("")}
		if exp != 0 {
			it[attrExpiresAt] = attrN(exp)
		}
		if ref != "" {
			it[attrValue] = refAttr("msgpack", ref)
		}
		return it
	}
	cp := with("c!!2!", now.Unix()+100, "")
	cp[attrKind] = attrS(itemCheckpoint)
	cp[attrVersions] = &types.AttributeValueMemberM{Value: item{"a": attrS("1"), "b": attrS("1")}}
	w := with("c!!2!w!t!0!", now.Unix()+100, "obj-w")
	w[attrKind] = attrS(itemWrite)
	a := with("b!!a!1!", now.Unix()+50, "obj-a")
	a[attrChannel], a[attrVersion] = attrS("a"), attrS("1")
	b := with("b!!b!1!", 0, "")
	b[attrChannel], b[attrVersion] = attrS("b"), attrS("1")
	lifetimes := item{attrPK: pk, attrSK: attrS("x!!"), "ch:a": entryValue(blobRef{version: "1"}, now.Unix()+50)}
	db := &queryDB{txDB: &txDB{
		stored: map[string]item{"b!!a!1!": a, "b!!b!1!": b, "x!!": lifetimes},
		answer: func(call int, items []types.TransactWriteItem) error {
			if call == 1 {
				return cancel(len(items), map[int]item{1: with("b!!a!1!", exp+3600, "obj-a")})
			}
			return nil
		},
	}, items: []item{w, cp}}
	off := &retagOffloader{}
	s := NewStore(db, "t")
	s.Offload = off
	s.Now = func() time.Time { return now }
	if err := s.SetExpiry(t.Context(), saver.CheckpointRef{Tenant: "t", ThreadID: "th", ID: "2"}, exp); err != nil {
		t.Fatal(err)
	}
	cpUpdate := fmt.Sprintf("update c!!2!: attribute_exists(PK) AND (attribute_not_exists(expires_at) OR expires_at > %d): SET expires_at = %d", now.Unix(), exp)
	want := [][]string{
		{
			fmt.Sprintf("update x!!: attribute_exists(PK): SET ch:a = {e=%d r=obj-a v=1}", exp),
			fmt.Sprintf("update b!!a!1!: expires_at = %d: SET expires_at = %d", now.Unix()+50, exp),
			fmt.Sprintf("update c!!2!w!t!0!: expires_at = %d: SET expires_at = %d", now.Unix()+100, exp),
			cpUpdate, "put n!!2!: ",
		},
		{
			fmt.Sprintf("update c!!2!w!t!0!: expires_at = %d: SET expires_at = %d", now.Unix()+100, exp),
			cpUpdate, "put n!!2!: ",
		},
	}
	if len(db.requests) != len(want) {
		t.Fatalf("%d requests, want %d", len(db.requests), len(want))
	}
	for i, w := range want {
		if diff := cmp.Diff(w, describe(db.requests[i])); diff != "" {
			t.Fatalf("request %d mismatch (-want +got):\n%s", i+1, diff)
		}
	}
	slices.Sort(off.retags)
	if diff := cmp.Diff([]string{fmt.Sprint("obj-a@", exp), fmt.Sprint("obj-w@", exp)}, off.retags); diff != "" {
		t.Fatalf("retags mismatch (-want +got):\n%s", diff)
	}
}

// TestSetExpiryKeepsHash: the lifetimes entry SetExpiry rewrites for a blob
// it extends keeps the value's content hash. Known values and patch bases
// are checked against it; without it the next put's conditions failed, a
// transaction was cancelled and the replica forgot what it remembered.
func TestSetExpiryKeepsHash(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	exp := now.Unix() + 3600
	pk := attrS(partitionKey("t", "th"))
	cp := item{attrPK: pk, attrSK: attrS("c!!2!"), attrChannel: attrS(""), attrVersion: attrS(""), attrKind: attrS(itemCheckpoint),
		attrExpiresAt: attrN(now.Unix() + 100), attrVersions: &types.AttributeValueMemberM{Value: item{"a": attrS("1")}}}
	a := item{attrPK: pk, attrSK: attrS("b!!a!1!"), attrChannel: attrS("a"), attrVersion: attrS("1"), attrExpiresAt: attrN(now.Unix() + 50)}
	lifetimes := item{attrPK: pk, attrSK: attrS("x!!"), "ch:a": entryValue(blobRef{version: "1", hash: "h1"}, now.Unix()+50)}
	db := &queryDB{txDB: &txDB{stored: map[string]item{"b!!a!1!": a, "x!!": lifetimes}}, items: []item{cp}}
	s := NewStore(db, "t")
	s.Now = func() time.Time { return now }
	if err := s.SetExpiry(t.Context(), saver.CheckpointRef{Tenant: "t", ThreadID: "th", ID: "2"}, exp); err != nil {
		t.Fatal(err)
	}
	if len(db.requests) != 1 {
		t.Fatalf("%d requests, want 1", len(db.requests))
	}
	got := describe(db.requests[0])
	if want := fmt.Sprintf("update x!!: attribute_exists(PK): SET ch:a = {e=%d h=h1 v=1}", exp); got[0] != want {
		t.Fatalf("lifetimes update\n got %s\nwant %s", got[0], want)
	}
}
