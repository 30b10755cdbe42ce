package awsx

import "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

// Item is a DynamoDB item, or a key, or the values of an expression.
type Item = map[string]types.AttributeValue

// ItemSize estimates an item's size as DynamoDB counts it against its limit:
// attribute names plus values, with a few bytes of overhead per map entry.
func ItemSize(it Item) int {
	n := 0
	for name, v := range it {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return len(v.Value)/2 + 2
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += len(k) + valueSize(e) + 1
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += valueSize(e) + 1
		}
		return n
	}
	return 1
}

func nilIfEmpty(it Item) Item {
	if len(it) == 0 {
		return nil
	}
	return it
}
