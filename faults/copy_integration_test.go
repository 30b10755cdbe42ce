//go:build integration

package faults_test

import (
	"fmt"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/dynamo"
	"github.com/saver-dev/saver/faults"
	"github.com/saver-dev/saver/localstack"
	"github.com/saver-dev/saver/storetest"
)

// TestCopyThreadInterruptedAndRerun copies a DeltaChannel thread of 360
// items with DynamoDB failing from the nth request on, for every n the copy
// takes: the interrupted copy shows only checkpoints whose chains it holds
// whole (blobs, then writes, then checkpoints in id order), and the copy run
// again completes it, every checkpoint's history equal to the source's.
func TestCopyThreadInterruptedAndRerun(t *testing.T) {
	st := localstack.MustStore(t)
	ft := faults.New(awshttp.NewBuildableClient().GetTransport())
	cfg := localstack.MustConfig(t)
	faulty := dynamo.NewStore(faultyClient(cfg, ft, nil, fastRetries), st.Store.Table())
	src := storetest.NewRef()
	const turns = 120
	storetest.PutChat(t, st.Store, src, turns, 1, 40, 80)
	history := func(ref saver.CheckpointRef, id string) map[string]storetest.History {
		return storetest.Histories(storetest.MustDeltaHistory(t, st.Store, storetest.At(ref, id), "messages"))
	}
	for skip := int64(1); ; skip++ {
		if skip > 40 {
			t.Fatal("the copy still fails with the first 40 requests let through")
		}
		dst := src
		dst.ThreadID = fmt.Sprintf("%s-copy-%d", src.ThreadID, skip)
		ft.Set(faults.Rule{Fault: faults.ServerError, Rate: 1, Skip: skip})
		err := faulty.CopyThread(t.Context(), src.Tenant, src.ThreadID, dst.ThreadID)
		ft.Clear()
		if err == nil {
			t.Logf("the copy takes %d requests; interrupted after each, it was completed by running it again", skip-1)
			return
		}
		if got := saver.ErrorCode(err); got != saver.EUNAVAILABLE {
			t.Fatalf("interrupted copy: %v (code %s), want unavailable", err, got)
		}
		for _, tup := range storetest.MustListThread(t, st.Store, dst.Tenant, dst.ThreadID) {
			storetest.MustEqualHistory(t, st.Store, storetest.At(dst, tup.ID), history(src, tup.ID))
		}
		if err := st.Store.CopyThread(t.Context(), src.Tenant, src.ThreadID, dst.ThreadID); err != nil {
			t.Fatalf("copy run again after %d requests: %v", skip, err)
		}
		copied := storetest.MustListThread(t, st.Store, dst.Tenant, dst.ThreadID)
		if len(copied) != turns {
			t.Fatalf("copy run again after %d requests: %d checkpoints, want %d", skip, len(copied), turns)
		}
		for _, tup := range copied {
			storetest.MustEqualHistory(t, st.Store, storetest.At(dst, tup.ID), history(src, tup.ID))
		}
	}
}
