package dynamo

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/internal/awsx"
)

// headDB is txDB answering the head Queries of conditional puts: the i-th
// Query finds heads[i] ("" none).
type headDB struct {
	*txDB
	heads   []string
	queries int
}

func (d *headDB) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	head := d.heads[d.queries]
	d.queries++
	out := &dynamodb.QueryOutput{}
	if head != "" {
		// The head's writes come first, walking backwards.
		out.Items = []item{{attrKind: attrS(itemWrite), attrID: attrS(head)}, {attrKind: attrS(itemCheckpoint), attrID: attrS(head)}}
	}
	return out, nil
}

// token is a head token as stored.
func token(id, nonce string) item {
	return item{attrHead: &types.AttributeValueMemberM{Value: item{headID: attrS(id), headNonce: attrS(nonce)}}}
}

// nonceOf returns the nonce a request's head token sets.
func nonceOf(t *testing.T, items []types.TransactWriteItem) string {
	t.Helper()
	for _, v := range items[0].Update.ExpressionAttributeValues {
		if m, ok := v.(*types.AttributeValueMemberM); ok {
			if n := getS(m.Value, headNonce); n != "" {
				return n
			}
		}
	}
	t.Fatal("the request sets no head token")
	return ""
}

// expecting returns in conditioned on head.
func expecting(in saver.PutCheckpoint, head string) saver.PutCheckpoint {
	in.ExpectHead = &head
	return in
}

// TestPutExpectHeadRequest checks the first request of conditional puts:
// the lifetimes update sets the head token, conditioned on it, inside the
// transaction, even for a put that would otherwise be one PutItem.
func TestPutExpectHeadRequest(t *testing.T) {
	tests := []struct {
		name string
		in   saver.PutCheckpoint
		head string
		want []string // N stands for the put's nonce
	}{
		{"Blobs", expecting(put(0), "1"), "1", []string{
			"update x!!: " + vouchedA + ")) AND " + vouchedB + ")) AND (attribute_not_exists(head) OR head.i = '1' OR head.n = 'N'): " +
				"SET kind = 'lifetimes', head = {i=2 n=N}, ch:new = {e=0 h=TJRIXgwhrmxBzh3- v=2} REMOVE expires_at",
			inserted, notBuried1, notBuried2, putCP, putNode,
		}},
		{"NothingBroughtOrReferenced", func() saver.PutCheckpoint {
			in := put(0)
			in.ChannelVersions, in.Blobs = map[string]string{}, nil
			return expecting(in, "")
		}(), "", []string{
			"update x!!: (attribute_not_exists(head) OR head.n = 'N'): SET kind = 'lifetimes', head = {i=2 n=N} REMOVE expires_at",
			notBuried1, notBuried2, putCP, putNode,
		}},
		// The head stays where it is: the token names it, not this put.
		{"OlderID", expecting(put(0), "3"), "3", []string{
			"update x!!: " + vouchedA + ")) AND " + vouchedB + ")) AND (attribute_not_exists(head) OR head.i = '3' OR head.n = 'N'): " +
				"SET kind = 'lifetimes', head = {i=3 n=N}, ch:new = {e=0 h=TJRIXgwhrmxBzh3- v=2} REMOVE expires_at",
			inserted, notBuried1, notBuried2, putCP, putNode,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := &headDB{txDB: &txDB{}, heads: []string{tt.head}}
			s := NewStore(db, "t")
			s.Now = func() time.Time { return time.Unix(1_000_000, 0) }
			if err := s.PutCheckpoint(t.Context(), tt.in); err != nil {
				t.Fatal(err)
			}
			if len(db.requests) != 1 || db.queries != 1 {
				t.Fatalf("%d requests and %d queries, want 1 of each", len(db.requests), db.queries)
			}
			got := strings.Join(describe(db.requests[0]), "\n")
			got = strings.ReplaceAll(got, nonceOf(t, db.requests[0]), "N")
			if diff := cmp.Diff(strings.Join(tt.want, "\n"), got); diff != "" {
				t.Fatalf("request mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPutExpectHeadRevise fails the condition of a conditional put's
// transactions and checks what follows: a head found moved by the next read
// is a conflict; a stale token (the head did not move) is accepted by the
// next request, and only that token; a token that holds, when the entries
// failed, costs no read.
func TestPutExpectHeadRevise(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	tests := []struct {
		name   string
		heads  []string // what each head Query finds
		failed []item   // the lifetimes item each request fails on, in turn
		code   string
		second string // the token condition of the second request
	}{
		{"Moved", []string{"1", "9"}, []item{token("9", "other")}, saver.ECONFLICT, ""},
		{"StaleToken", []string{"1", "1"}, []item{token("0", "stale")}, "", "(head.n = 'stale' OR head.n = 'N')"},
		{"StaleTokenNoHead", []string{"", ""}, []item{token("0", "stale")}, "", "(head.n = 'stale' OR head.n = 'N')"},
		{"StaleThenMoved", []string{"1", "1", "9"}, []item{token("0", "stale"), token("9", "other")}, saver.ECONFLICT, "(head.n = 'stale' OR head.n = 'N')"},
		{"EntriesFailed", []string{"1"}, []item{func() item {
			it := token("1", "other")
			it["ch:a"] = entryValue(blobRef{version: "0"}, 0) // another version: read
			return it
		}()}, "", "(attribute_not_exists(head) OR head.i = '1' OR head.n = 'N')"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := &headDB{txDB: &txDB{answer: func(call int, items []types.TransactWriteItem) error {
				if call <= len(tt.failed) {
					return cancel(len(items), map[int]item{0: tt.failed[call-1]})
				}
				return nil
			}}, heads: tt.heads}
			s := NewStore(db, "t")
			s.Now = func() time.Time { return now }
			err := s.PutCheckpoint(t.Context(), expecting(put(0), tt.heads[0]))
			if got := saver.ErrorCode(err); got != tt.code {
				t.Fatalf("error code %q (%v), want %q", got, err, tt.code)
			}
			requests := len(tt.failed)
			if tt.code == "" {
				requests++
			}
			if len(db.requests) != requests || db.queries != len(tt.heads) {
				t.Fatalf("%d requests and %d queries, want %d and %d", len(db.requests), db.queries, requests, len(tt.heads))
			}
			if tt.second == "" {
				return
			}
			n := nonceOf(t, db.requests[1])
			if n != nonceOf(t, db.requests[0]) {
				t.Fatal("the second request sets another nonce")
			}
			if cond := strings.ReplaceAll(describe(db.requests[1])[0], n, "N"); !strings.Contains(cond, tt.second) {
				t.Fatalf("second request %s\nwant the token condition %s", cond, tt.second)
			}
		})
	}
}

// TestHeadGuardAccepts checks that accepts reads a stored item as the
// condition does.
func TestHeadGuardAccepts(t *testing.T) {
	tests := []struct {
		name   string
		g      headGuard
		stored item
		want   bool
	}{
		{"FirstNoItem", headGuard{expect: "1", nonce: "me"}, nil, true},
		{"FirstNoToken", headGuard{expect: "1", nonce: "me"}, item{"ch:a": attrS("x")}, true},
		{"FirstNamesHead", headGuard{expect: "1", nonce: "me"}, token("1", "x"), true},
		{"FirstNamesOther", headGuard{expect: "1", nonce: "me"}, token("2", "x"), false},
		{"FirstEmptyExpectNamesNone", headGuard{nonce: "me"}, token("", "x"), false},
		{"Own", headGuard{expect: "1", nonce: "me", reread: true, seen: "x"}, token("7", "me"), true},
		{"Seen", headGuard{expect: "1", nonce: "me", reread: true, seen: "x"}, token("7", "x"), true},
		{"SeenNamesHeadOnly", headGuard{expect: "1", nonce: "me", reread: true, seen: "x"}, token("1", "y"), false},
		{"SeenGone", headGuard{expect: "1", nonce: "me", reread: true, seen: "x"}, nil, false},
		{"SeenAbsent", headGuard{expect: "1", nonce: "me", reread: true}, nil, true},
		{"SeenAbsentNowSet", headGuard{expect: "1", nonce: "me", reread: true}, token("1", "y"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.g.accepts(tt.stored); got != tt.want {
				t.Fatalf("accepts(%v) = %v, want %v (condition %s)", tt.stored, got, tt.want, tt.g.cond(awsx.NewExpr("c")))
			}
		})
	}
}
