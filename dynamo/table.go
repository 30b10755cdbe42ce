package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/saver-dev/saver/internal/awsx"
)

// TableWait bounds how long CreateTable waits for a new table to be ACTIVE.
const TableWait = 5 * time.Minute

// CreateTable creates the store's table if it does not exist: string keys PK
// and SK, on-demand billing, no index. It waits until the table is ACTIVE
// and enables TTL on AttrExpiresAt, so expiry needs no migration later.
// Calling it on an existing table only checks and completes that setup.
func (s *Store) CreateTable(ctx context.Context) error {
	_, err := s.db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: &s.table.Name,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: ptr(attrPK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: ptr(attrSK), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: ptr(attrPK), KeyType: types.KeyTypeHash},
			{AttributeName: ptr(attrSK), KeyType: types.KeyTypeRange},
		},
		BillingMode: types.BillingModePayPerRequest,
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("dynamo: create table %s: %w", s.table.Name, awsx.DynamoError(err))
	}
	waiter := dynamodb.NewTableExistsWaiter(s.db, func(o *dynamodb.TableExistsWaiterOptions) {
		// The default starts at 20 s between polls; a new on-demand table is
		// usually ACTIVE within seconds (at once on the emulators).
		o.MinDelay = 200 * time.Millisecond
		o.MaxDelay = 5 * time.Second
	})
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: &s.table.Name}, TableWait); err != nil {
		return fmt.Errorf("dynamo: wait for table %s: %w", s.table.Name, awsx.DynamoError(err))
	}
	if err := s.enableTTL(ctx); err != nil {
		return fmt.Errorf("dynamo: enable ttl on %s: %w", s.table.Name, awsx.DynamoError(err))
	}
	return nil
}

// EnsureTable is CreateTable under the name callers at startup look for.
func (s *Store) EnsureTable(ctx context.Context) error { return s.CreateTable(ctx) }

// enableTTL turns TTL on for AttrExpiresAt unless it already is (asking to
// enable it twice is an error in DynamoDB).
func (s *Store) enableTTL(ctx context.Context) error {
	out, err := s.db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: &s.table.Name})
	if err != nil {
		return err
	}
	if d := out.TimeToLiveDescription; d != nil && aws.ToString(d.AttributeName) == AttrExpiresAt &&
		(d.TimeToLiveStatus == types.TimeToLiveStatusEnabled || d.TimeToLiveStatus == types.TimeToLiveStatusEnabling) {
		return nil
	}
	_, err = s.db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: &s.table.Name,
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: ptr(AttrExpiresAt),
			Enabled:       ptr(true),
		},
	})
	return err
}
