package dynamo

import (
	"bytes"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/saver-dev/saver"
)

// TestPatchCacheFromReads checks the reads' part in the patch cache: a
// latest read remembers the values it returns, so that the thread's next
// put of a grown value is a patch on it; a read by id remembers nothing,
// and the same put brings the whole value.
func TestPatchCacheFromReads(t *testing.T) {
	doc1 := bytes.Repeat([]byte("d"), minPatchedValue)
	ref := saver.CheckpointRef{Tenant: "t", ThreadID: "th", ID: "1"}
	cp := item{
		attrPK: attrS(partitionKey("t", "th")), attrSK: attrS(checkpointKey("", "1")),
		attrKind: attrS(itemCheckpoint), attrThread: attrS("th"), attrNS: attrS(""), attrID: attrS("1"),
		attrBody:     payloadAttr(saver.Typed{Type: "msgpack", Data: []byte("body")}),
		attrVersions: &types.AttributeValueMemberM{Value: item{"doc": attrS("1")}},
	}
	blob := inlineBlobItem(ref, saver.Blob{Channel: "doc", Version: "1", Value: saver.Typed{Type: "msgpack", Data: doc1}}, 0)
	grown := put(0)
	grown.ChannelVersions = map[string]string{"doc": "2"}
	grown.Blobs = []saver.Blob{{Channel: "doc", Version: "2", Value: saver.Typed{Type: "msgpack", Data: append(bytes.Clone(doc1), "more"...)}}}
	for _, tt := range []struct {
		name  string
		read  saver.CheckpointRef
		patch bool
	}{
		{"Latest", saver.CheckpointRef{Tenant: "t", ThreadID: "th"}, true},
		{"ByID", ref, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := &queryDB{txDB: &txDB{stored: map[string]item{getS(blob, attrSK): blob}}, items: []item{cp}}
			s := NewStore(db, "t")
			s.Now = func() time.Time { return time.Unix(1_000_000, 0) }
			tup, err := s.GetTuple(t.Context(), tt.read)
			if err != nil || len(tup.Values) != 1 || !bytes.Equal(tup.Values[0].Value.Data, doc1) {
				t.Fatalf("GetTuple = %v, %v; want doc@1", tup, err)
			}
			if err := s.PutCheckpoint(t.Context(), grown); err != nil {
				t.Fatal(err)
			}
			_, patch := db.requests[0][1].Put.Item[attrPatch]
			if patch != tt.patch {
				t.Fatalf("doc@2 put as a patch: %v, want %v", patch, tt.patch)
			}
		})
	}
}
