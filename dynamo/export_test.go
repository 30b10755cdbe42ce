package dynamo

import "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

// BlobItemKey returns the primary key of a blob's item, for tests that look
// at items as stored.
func BlobItemKey(tenant, threadID, ns, channel, version string) map[string]types.AttributeValue {
	return item{attrPK: attrS(partitionKey(tenant, threadID)), attrSK: attrS(blobKey(ns, channel, version))}
}

// CheckpointItemKey returns the primary key of a checkpoint's item.
func CheckpointItemKey(tenant, threadID, ns, id string) map[string]types.AttributeValue {
	return item{attrPK: attrS(partitionKey(tenant, threadID)), attrSK: attrS(checkpointKey(ns, id))}
}
