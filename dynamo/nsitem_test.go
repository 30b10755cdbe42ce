package dynamo

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/saver-dev/saver"
)

// TestNamespaceItemParts puts a checkpoint that brings a patch, references a
// value the store remembers and expects a head: its namespace item update
// joins the conditions of the four parts (the lifetimes entry vouching for
// the reference, that entry's hash, the patch's base, the head token), and
// the checkpoint item carries their hints. When the stored item refutes the
// patch's base (another process put that version with other bytes), the
// next request brings the whole value, and the other parts, which the item
// still meets, keep their conditions.
func TestNamespaceItemParts(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	doc1 := bytes.Repeat([]byte("d"), minPatchedValue)
	doc2 := append(bytes.Clone(doc1), "more"...)
	first := put(0)
	first.ID, first.ParentID = "1", ""
	first.ChannelVersions = map[string]string{"doc": "1", "a": "1"}
	first.Blobs = []saver.Blob{
		{Channel: "doc", Version: "1", Value: saver.Typed{Type: "msgpack", Data: doc1}},
		{Channel: "a", Version: "1", Value: saver.Typed{Type: "msgpack", Data: []byte("x")}},
	}
	second := expecting(put(0), "1")
	second.ChannelVersions = map[string]string{"doc": "2", "a": "1"}
	second.Blobs = []saver.Blob{{Channel: "doc", Version: "2", Value: saver.Typed{Type: "msgpack", Data: doc2}}}

	h1, h2, ha := contentHash(doc1), contentHash(doc2), contentHash([]byte("x"))
	stored := token("1", "other")
	stored["ch:a"] = entryValue(blobRef{version: "1", hash: ha}, 0)
	stored["ch:doc"] = entryValue(blobRef{version: "1", hash: "another"}, 0)
	// What each request's blob and checkpoint items say, as sent: the
	// checkpoint item is revised in place for the next request.
	type sent struct {
		patch, chains bool
		known         map[string]knownValue
	}
	var sents []sent
	db := &headDB{txDB: &txDB{answer: func(call int, items []types.TransactWriteItem) error {
		if call == 1 {
			return nil
		}
		blob, cp := items[1].Put.Item, items[len(items)-2].Put.Item // the index item last
		_, patch := blob[attrPatch]
		_, chains := cp[attrChains]
		sents = append(sents, sent{patch, chains, knownOf(cp)})
		if call == 2 { // the second put's first request
			return cancel(len(items), map[int]item{0: stored})
		}
		return nil
	}}, heads: []string{"1"}}
	s := NewStore(db, "t")
	s.Now = func() time.Time { return now }
	if err := s.PutCheckpoint(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	if err := s.PutCheckpoint(t.Context(), second); err != nil {
		t.Fatal(err)
	}
	if len(db.requests) != 3 || db.queries != 1 {
		t.Fatalf("%d requests and %d queries, want 3 and 1", len(db.requests), db.queries)
	}
	vouchA := "(ch:a.v = '1' AND (ch:a.e = 0))"
	headCond := "(attribute_not_exists(head) OR head.i = '1' OR head.n = 'N')"
	want := [][]string{
		{
			"update x!!: " + vouchA + " AND ch:a.h = '" + ha + "' AND (ch:doc.v = '1' AND ch:doc.e = 0 AND ch:doc.h = '" + h1 + "') AND " + headCond +
				": SET kind = 'lifetimes', head = {i=2 n=N}, ch:doc = {e=0 h=" + h2 + " v=2} REMOVE expires_at",
			"put b!!doc!2!: attribute_not_exists(PK) OR expires_at <= 1000000", notBuried1, notBuried2, putCP, putNode,
		},
		{
			"update x!!: " + vouchA + " AND ch:a.h = '" + ha + "' AND " + headCond +
				": SET kind = 'lifetimes', head = {i=2 n=N}, ch:doc = {e=0 h=" + h2 + " v=2} REMOVE expires_at",
			"put b!!doc!2!: attribute_not_exists(PK) OR expires_at <= 1000000", notBuried1, notBuried2, putCP, putNode,
		},
	}
	for i, w := range want {
		req := db.requests[i+1]
		got := strings.Join(describe(req), "\n")
		got = strings.ReplaceAll(got, nonceOf(t, req), "N")
		if diff := cmp.Diff(strings.Join(w, "\n"), got); diff != "" {
			t.Fatalf("request %d mismatch (-want +got):\n%s", i+2, diff)
		}
		if got := sents[i]; got.patch != (i == 0) || got.chains != (i == 0) {
			t.Fatalf("request %d: blob a patch %v, checkpoint chains %v; want both %v", i+2, got.patch, got.chains, i == 0)
		}
		if known := sents[i].known; len(known) != 2 || known["a"].hash != ha || known["doc"].hash != h2 {
			t.Fatalf("request %d: checkpoint knows %v, want a and doc", i+2, known)
		}
	}
}
