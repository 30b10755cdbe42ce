package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/saver-dev/saver"
)

var _ saver.TreeStore = (*Store)(nil)

// LangGraph stores each special channel's writes at its own negative idx
// (WRITES_IDX_MAP), so a write's idx tells whether it is an error or an
// interrupt without reading its channel.
const (
	errorIdx     = -1 // saver.ChannelError
	interruptIdx = -3 // saver.ChannelInterrupt
)

// nodeAttrs are the attributes ListNodes reads: keys, the parent link, the
// node fields a put copies out of the metadata, the idx of writes and the
// expiry. Never a payload, the metadata or the channel versions.
var nodeAttrs = []string{attrKind, attrNS, attrID, attrParent, attrSource, attrStep, attrParents, attrIdx, attrExpiresAt}

// ListNodes returns every checkpoint of the thread as a node, from one Query
// over the thread's checkpoints and writes (one request per 1 MB page) that
// projects nodeAttrs only. Writes sort right after their checkpoint, so one
// pass flags each checkpoint from the writes that follow it; writes on a
// checkpoint that was never put follow another id and are passed over.
//
// The projection keeps payloads off the wire and out of memory; DynamoDB
// still counts each item whole against the 1 MB page and the read units.
func (s *Store) ListNodes(ctx context.Context, tenant, threadID string) ([]saver.Node, error) {
	in := &dynamodb.QueryInput{
		KeyConditionExpression: ptr("PK = :pk AND begins_with(SK, :c)"),
		ExpressionAttributeValues: item{
			":pk": attrS(partitionKey(tenant, threadID)),
			":c":  attrS(threadCheckpointsPrefix()),
		},
	}
	project(&in.ProjectionExpression, &in.ExpressionAttributeNames, nodeAttrs)
	var (
		nodes = []saver.Node{}
		cur   = -1 // index in nodes of the checkpoint the next writes follow
	)
	err := s.table.Query(ctx, in, func(items []item) bool {
		for _, it := range items {
			if s.expired(getN(it, attrExpiresAt)) {
				continue
			}
			ns, id := getS(it, attrNS), getS(it, attrID)
			switch getS(it, attrKind) {
			case itemCheckpoint:
				nodes = append(nodes, decodeNode(threadID, it))
				cur = len(nodes) - 1
			case itemWrite:
				if cur < 0 || nodes[cur].NS != ns || nodes[cur].ID != id {
					continue
				}
				switch getN(it, attrIdx) {
				case errorIdx:
					nodes[cur].HasError = true
				case interruptIdx:
					nodes[cur].HasInterrupt = true
				}
			}
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("dynamo: list nodes of thread %s: %w", threadID, err)
	}
	return nodes, nil
}

// decodeNode returns the node of a checkpoint item read with nodeAttrs.
func decodeNode(threadID string, it item) saver.Node {
	n := saver.Node{
		ThreadID: threadID,
		NS:       getS(it, attrNS),
		ID:       getS(it, attrID),
		ParentID: getS(it, attrParent),
		Source:   getS(it, attrSource),
		Step:     getN(it, attrStep),
	}
	if parents := stringMap(it[attrParents]); len(parents) > 0 {
		n.Parents = parents
	}
	return n
}
