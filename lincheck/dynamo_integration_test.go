//go:build integration

package lincheck

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/saver-dev/saver/localstack"
)

// replicaCount is the number of services on one table and bucket.
const replicaCount = 3

// Offload sizes: values over offloadBytes go to S3; padded values are
// over it.
const (
	offloadBytes = 1024
	padBytes     = 2048
)

// cluster is replicaCount services on one DynamoDB table and S3 bucket of
// the local AWS stack, reaching each through a Proxy the test controls.
type cluster struct {
	replicas []*Service
	dynamo   *Proxy
	s3       *Proxy
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	st := localstack.MustStore(t)
	c := &cluster{}
	for _, p := range []struct {
		env string
		to  **Proxy
	}{{"AWS_ENDPOINT_URL_DYNAMODB", &c.dynamo}, {"AWS_ENDPOINT_URL_S3", &c.s3}} {
		u, err := url.Parse(os.Getenv(p.env))
		if err != nil || u.Host == "" {
			t.Fatalf("%s=%q: want the local stack's endpoint", p.env, os.Getenv(p.env))
		}
		px, err := NewProxy(u.Host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(px.Close)
		*p.to = px
	}
	env := []string{
		"SAVER_STORE=dynamodb",
		"SAVER_TABLE=" + st.Store.Table(),
		"SAVER_BUCKET=" + st.Offload.Bucket(),
		fmt.Sprintf("SAVER_OFFLOAD_BYTES=%d", offloadBytes),
		// A stopped or frozen backend is answered 503 within this: a
		// frozen fault lasts until 2 x SAVER_LIN_CLIENTS requests have
		// failed, each after this long, and the emulator answers in
		// milliseconds.
		"SAVER_REQUEST_TIMEOUT=1s",
		"AWS_ENDPOINT_URL_DYNAMODB=http://" + c.dynamo.Addr(),
		"AWS_ENDPOINT_URL_S3=http://" + c.s3.Addr(),
	}
	bin := binary(t)
	for i := range replicaCount {
		svc := &Service{Bin: bin, Dir: t.TempDir(), Env: env}
		if err := svc.Start(t.Context()); err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
		t.Cleanup(func() { svc.Kill() })
		c.replicas = append(c.replicas, svc)
	}
	return c
}

// target picks a replica at random for each request.
func (c *cluster) target() string { return c.replicas[rand.IntN(len(c.replicas))].URL() }

// runFaults runs the load on c, injecting faults one after the other: each
// in the middle of an epoch, SAVER_LIN_OPS operations apart. It then reads
// every key back and checks the history.
func runFaults(t *testing.T, c *cluster, name string, faults []func(ctx context.Context, l *Load) error) {
	sz := runSizes(t)
	h := NewHistory()
	l := &Load{History: h, Clients: sz.Clients, Target: c.target, Timeout: sz.Timeout, Pad: padBytes}
	start := time.Now()
	stop := runLoad(t.Context(), l)
	fail := func(err error) {
		t.Helper()
		stop()
		t.Fatal(err)
	}
	for _, fault := range faults {
		if err := l.WaitOps(t.Context(), h.Len()+sz.Ops/2); err != nil {
			fail(err)
		}
		l.NextEpoch()
		if err := l.WaitOps(t.Context(), h.Len()+sz.Ops/2); err != nil {
			fail(err)
		}
		if err := fault(t.Context(), l); err != nil {
			fail(err)
		}
	}
	if err := l.WaitOps(t.Context(), h.Len()+sz.Ops/2); err != nil {
		fail(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if err := l.ReadAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Logf("LINCHECK %s: %d faults, %s, load %s", name, len(faults), h.Stats(), time.Since(start).Round(time.Millisecond))
	mustLinearizable(t, h, name, sz.Check)
}

// TestDynamoReplicaKills checks heads, claims and Store items on three
// replicas of one DynamoDB table and bucket, each request sent to a
// replica picked at random, while the replicas are killed with SIGKILL in
// turn mid-load and restarted (SAVER_LIN_FAULTS kills).
func TestDynamoReplicaKills(t *testing.T) {
	c := newCluster(t)
	var faults []func(context.Context, *Load) error
	for i := range runSizes(t).Faults {
		svc := c.replicas[i%len(c.replicas)]
		faults = append(faults, func(ctx context.Context, _ *Load) error { return svc.Restart(ctx) })
	}
	runFaults(t, c, "dynamo-replica-kills", faults)
}

// TestDynamoBackendFaults checks heads, claims and Store items on three
// replicas while, in turn, DynamoDB is stopped (connections reset),
// DynamoDB is frozen (connections held, then delivered late), S3 is cut
// off and S3 is frozen; each fault lasts until the clients have felt it
// (2 x SAVER_LIN_CLIENTS requests of unknown outcome, reads included, or
// SAVER_LIN_OPS/4 operations in all). Values over the offload size go to
// S3.
func TestDynamoBackendFaults(t *testing.T) {
	c := newCluster(t)
	sz := runSizes(t)
	kinds := []struct {
		name  string
		proxy *Proxy
		mode  Mode
	}{
		{"dynamodb stopped", c.dynamo, Down},
		{"dynamodb frozen", c.dynamo, Frozen},
		{"s3 cut off", c.s3, Down},
		{"s3 frozen", c.s3, Frozen},
	}
	felt := map[string]int{}    // requests of unknown outcome
	unknown := map[string]int{} // operations of unknown outcome in the history
	held := map[string]time.Duration{}
	var faults []func(context.Context, *Load) error
	for i := range max(sz.Faults, len(kinds)) {
		k := kinds[i%len(kinds)]
		faults = append(faults, func(ctx context.Context, l *Load) error {
			failed, before, start := l.Failed(), l.History.Unknown(), time.Now()
			k.proxy.Set(k.mode)
			err := l.WaitFelt(ctx, 2*sz.Clients, sz.Ops/4)
			k.proxy.Set(Pass)
			felt[k.name] += l.Failed() - failed
			unknown[k.name] += l.History.Unknown() - before
			held[k.name] += time.Since(start)
			return err
		})
	}
	runFaults(t, c, "dynamo-backend-faults", faults)
	for _, k := range kinds {
		t.Logf("LINCHECK %s: %d requests failed, %d operations of unknown outcome, held %s", k.name, felt[k.name], unknown[k.name], held[k.name].Round(time.Millisecond))
		if felt[k.name] == 0 {
			t.Errorf("%s: no request met the fault", k.name)
		}
	}
}
