package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/saver-dev/saver"
)

// blobID is a blob's primary key.
type blobID struct{ pk, sk string }

// storedBlob is a blob item as read: a whole value, or a patch on the last
// version of chain (see patched.go).
type storedBlob struct {
	blob  *saver.Blob
	ns    string
	chain []string
	hash  string // of the whole value, for a patch
	exp   int64  // 0: never
}

// resolved is a blob's whole value, with what recent needs to patch on it.
type resolved struct {
	data    []byte
	chain   []string
	patched int
	hash    string // contentHash(data), for a patch; "" until asked for
}

// blobReader reads the blobs of checkpoints and resolves patched values:
// BatchGetItems of the keys asked for, then, when a patch's chain holds
// blobs not read yet (a checkpoint that did not list it), one round more.
type blobReader struct {
	s       *Store
	now     time.Time // one clock for every round: a patch and its base expire together
	keys    []item
	seen    map[blobID]bool
	stored  map[blobID]*storedBlob
	values  map[blobID]*resolved
	pending loads // offloaded payloads to fetch with the next read
}

func newBlobReader(s *Store) *blobReader {
	return &blobReader{s: s, now: s.Now(), seen: map[blobID]bool{}, stored: map[blobID]*storedBlob{}, values: map[blobID]*resolved{}}
}

// want adds the blob of channel at version in ns to the next read.
func (r *blobReader) want(pk, ns, channel, version string) {
	id := blobID{pk, blobKey(ns, channel, version)}
	if !r.seen[id] {
		r.seen[id] = true
		r.keys = append(r.keys, item{attrPK: attrS(pk), attrSK: attrS(id.sk)})
	}
}

// read fetches the blobs wanted, with their offloaded payloads and those
// added to r.pending, then the chains they name that were not read.
func (r *blobReader) read(ctx context.Context) error {
	for round := 0; len(r.keys) > 0 || len(r.pending.refs) > 0; round++ {
		if round == 2 {
			return fmt.Errorf("blob chains still incomplete after two reads")
		}
		found, err := r.s.table.BatchGet(ctx, r.keys)
		if err != nil {
			return err
		}
		r.keys = nil
		l := r.pending
		r.pending = loads{}
		var inline int64
		for _, it := range found {
			exp := getN(it, attrExpiresAt)
			if saver.Expired(exp, r.now) {
				continue
			}
			b, err := decodeBlob(it, &l)
			if err != nil {
				return err
			}
			inline += int64(len(b.Value.Data))
			sb := &storedBlob{blob: b, ns: getS(it, attrNS), exp: exp}
			sb.chain, sb.hash = patchOf(it)
			pk := getS(it, attrPK)
			r.stored[blobID{pk, getS(it, attrSK)}] = sb
			for _, v := range sb.chain {
				r.want(pk, sb.ns, b.Channel, v)
			}
		}
		// The answer holds the values read: charged to the response budget
		// (saver.Take) as each round arrives, the inline ones before S3 is
		// asked, the offloaded ones once the round's loads are in.
		if err := saver.Take(ctx, inline); err != nil {
			return err
		}
		if err := r.s.fetch(ctx, &l); err != nil {
			return err
		}
		var offloaded int64
		for _, d := range l.dsts {
			offloaded += int64(len(*d))
		}
		if err := saver.Take(ctx, offloaded); err != nil {
			return err
		}
	}
	return nil
}

// value returns the whole value of a blob read, nil if it was not found
// (absent or expired). A patch is resolved on its chain (patches.resolve).
func (r *blobReader) value(pk, ns, channel, version string) (*resolved, *storedBlob, error) {
	id := blobID{pk, blobKey(ns, channel, version)}
	sb := r.stored[id]
	if sb == nil {
		return nil, nil, nil
	}
	if v, ok := r.values[id]; ok {
		return v, sb, nil
	}
	v := &resolved{data: sb.blob.Value.Data}
	if n := len(sb.chain); n > 0 {
		base, _, err := r.value(pk, ns, channel, sb.chain[n-1])
		if err != nil {
			return nil, nil, err
		}
		v, err = patches{r.s}.resolve(channel, version, sb, base)
		if err != nil {
			return nil, nil, err
		}
	}
	r.values[id] = v
	return v, sb, nil
}

// chainsOf returns a checkpoint item's chains hint.
func chainsOf(it item) map[string][]string {
	m, ok := it[attrChains].(*types.AttributeValueMemberM)
	if !ok {
		return nil
	}
	out := make(map[string][]string, len(m.Value))
	for ch := range m.Value {
		out[ch] = getStrings(m.Value, ch)
	}
	return out
}
