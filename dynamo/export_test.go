package dynamo

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/saver-dev/saver"
)

// BlobItemKey returns the primary key of a blob's item, for tests that look
// at items as stored.
func BlobItemKey(tenant, threadID, ns, channel, version string) map[string]types.AttributeValue {
	return item{attrPK: attrS(partitionKey(tenant, threadID)), attrSK: attrS(blobKey(ns, channel, version))}
}

// CheckpointItemKey returns the primary key of a checkpoint's item.
func CheckpointItemKey(tenant, threadID, ns, id string) map[string]types.AttributeValue {
	return item{attrPK: attrS(partitionKey(tenant, threadID)), attrSK: attrS(checkpointKey(ns, id))}
}

// TreeIndex returns the thread's live tree index entries and the entries
// its live checkpoints and writes make, each as its index sort key mapped
// to the entry and expiry, and whether the thread has a live marker.
func (s *Store) TreeIndex(ctx context.Context, tenant, threadID string) (got, want map[string]string, marked bool, err error) {
	st, err := s.readIndex(ctx, partitionKey(tenant, threadID))
	if err != nil {
		return nil, nil, false, err
	}
	_, items, iexps, err := s.scanNodes(ctx, tenant, threadID)
	if err != nil {
		return nil, nil, false, err
	}
	show := func(es []*indexEntry, exps []int64) map[string]string {
		m := map[string]string{}
		for i, e := range es {
			m[e.sk()] = fmt.Sprintf("%+v expires %d", *e, exps[i])
		}
		return m
	}
	return show(st.entries, st.exps), show(items, iexps), st.marker != nil, nil
}

// ScanNodes returns the thread's nodes read from its checkpoints and
// writes, as before the tree index.
func (s *Store) ScanNodes(ctx context.Context, tenant, threadID string) ([]saver.Node, error) {
	nodes, _, _, err := s.scanNodes(ctx, tenant, threadID)
	return nodes, err
}

// IndexKeyPrefix starts the sort key of every tree index item.
const IndexKeyPrefix = kindIndex

// TreeItems counts the thread's tree index items: singles (the marker
// apart) and pages, listed or not.
func (s *Store) TreeItems(ctx context.Context, tenant, threadID string) (singles, pages int, err error) {
	items, err := s.prefixItems(ctx, partitionKey(tenant, threadID), indexMarkerKey)
	for _, it := range items {
		switch sk := getS(it, attrSK); {
		case sk == indexMarkerKey:
		case strings.HasPrefix(sk, pagePrefix):
			pages++
		default:
			singles++
		}
	}
	return singles, pages, err
}
