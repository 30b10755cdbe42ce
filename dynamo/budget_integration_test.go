//go:build integration

package dynamo_test

import (
	"context"
	"strings"
	"testing"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/dynamo"
	"github.com/saver-dev/saver/localstack"
	"github.com/saver-dev/saver/storetest"
)

// capped is a response budget of limit bytes for one request.
type capped struct{ held, limit int64 }

func (c *capped) Take(_ context.Context, n int64) error {
	if c.held+n > c.limit {
		return saver.Errorf(saver.ETOOLARGE, "over %d bytes", c.limit)
	}
	c.held += n
	return nil
}

// TestReadsChargeTheResponseBudget: a tuple's channel values, inline or in
// S3, are charged to the request's response budget as they are read, so that
// many large reads at once wait for each other instead of taking the
// process's memory. Before, get_tuple and list charged nothing on DynamoDB:
// only the encoded answer counted, once every value was in memory.
func TestReadsChargeTheResponseBudget(t *testing.T) {
	st := localstack.MustStore(t)
	for _, tt := range []struct {
		name string
		size int
	}{{"Inline", 200 << 10}, {"Offloaded", 1 << 20}} {
		t.Run(tt.name, func(t *testing.T) {
			ref := storetest.NewRef()
			in := storetest.NewCheckpoint(ref, "c1")
			storetest.SetChannel(&in, "messages", "1", strings.Repeat("m", tt.size))
			storetest.MustPutCheckpoint(t, st.Store, in)
			// A replica that remembers no value reads them all.
			cold := dynamo.NewStore(st.DB, st.Store.Table())
			cold.Offload = st.Offload
			b := &capped{limit: int64(tt.size) / 2}
			_, err := cold.GetTuple(saver.WithBudget(t.Context(), b), in.CheckpointRef)
			if got, want := saver.ErrorCode(err), saver.ETOOLARGE; got != want {
				t.Fatalf("get_tuple of a %d-byte value within %d bytes: %v, want %s", tt.size, b.limit, err, want)
			}
			b = &capped{limit: 4 * int64(tt.size)}
			if _, err := cold.GetTuple(saver.WithBudget(t.Context(), b), in.CheckpointRef); err != nil {
				t.Fatal(err)
			}
			if b.held < int64(tt.size) {
				t.Fatalf("get_tuple charged %d bytes for a %d-byte value", b.held, tt.size)
			}
			b = &capped{limit: 4 * int64(tt.size)}
			if _, err := cold.ListCheckpoints(saver.WithBudget(t.Context(), b), saver.ListFilter{Tenant: ref.Tenant, ThreadID: ref.ThreadID}); err != nil {
				t.Fatal(err)
			}
			if b.held < int64(tt.size) {
				t.Fatalf("list charged %d bytes for a %d-byte value", b.held, tt.size)
			}
		})
	}
}
