// Command profserve is the saver service wired as cmd/saver wires it, plus
// net/http/pprof on a second loopback port: the benchmark's tool for finding
// where the service spends its time, and for its floor (`make bench`'s
// floor section): with -store null the API serves a store that keeps
// nothing (a put through the whole HTTP stack, decoding and validation
// included, minus the store), and the pprof port also answers /echo with an
// empty 200 from a bare net/http handler (the HTTP round trip alone).
//
//	profserve -store embedded -db F -addr-file A -pprof-addr-file P
//	profserve -store null -addr-file A -pprof-addr-file P
//	profserve -store dynamodb -table T -bucket B -addr-file A -pprof-addr-file P
//
// -mutex-fraction and -block-rate turn on the mutex and block profiles
// (/debug/pprof/mutex and /debug/pprof/block), off by default as they cost
// a little on every contended lock and blocking operation.
//
// Endpoints for dynamodb come from the standard AWS environment, as for
// `saver serve`. It serves until SIGINT or SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/api"
	"github.com/saver-dev/saver/api/apitest"
	"github.com/saver-dev/saver/dynamo"
	"github.com/saver-dev/saver/embedded"
	"github.com/saver-dev/saver/s3offload"
)

func main() {
	store := flag.String("store", "embedded", "embedded (or bolt, its former name), dynamodb or null")
	db := flag.String("db", "", "the embedded store (a Pebble directory)")
	table := flag.String("table", "", "DynamoDB table (created if missing)")
	bucket := flag.String("bucket", "", "S3 bucket for offload (must exist)")
	addrFile := flag.String("addr-file", "", "write the API address here")
	pprofFile := flag.String("pprof-addr-file", "", "write the pprof address here")
	mutexFraction := flag.Int("mutex-fraction", 0, "sample 1/n of mutex contention events (runtime.SetMutexProfileFraction); 0 off")
	blockRate := flag.Int("block-rate", 0, "sample a blocking event per n ns blocked (runtime.SetBlockProfileRate); 0 off")
	flag.Parse()
	runtime.SetMutexProfileFraction(*mutexFraction)
	runtime.SetBlockProfileRate(*blockRate)
	if err := run(*store, *db, *table, *bucket, *addrFile, *pprofFile); err != nil {
		fmt.Fprintln(os.Stderr, "profserve:", err)
		os.Exit(1)
	}
}

func run(store, db, table, bucket, addrFile, pprofFile string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var (
		st   saver.Store
		caps api.Capabilities // as cmd/saver wires each store
	)
	switch store {
	case "embedded", "bolt":
		b, err := embedded.Open(db)
		if err != nil {
			return err
		}
		defer b.Close()
		st = b
		caps = api.Capabilities{Tree: b, Trees: b, Ledger: b, Expirer: b, Items: b, Pinger: b, HeadGuard: true}
	case "dynamodb":
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return err
		}
		d := dynamo.NewStore(dynamo.NewClient(cfg, nil), table)
		if err := d.CreateTable(ctx); err != nil {
			return err
		}
		if bucket != "" {
			d.Offload = s3offload.NewStore(s3offload.NewClient(cfg), bucket)
		}
		st = d
		caps = api.Capabilities{Tree: d, Ledger: d, Expirer: d, Items: d, Pinger: d, HeadGuard: true}
	case "null":
		st = nullStore()
	default:
		return fmt.Errorf("unknown store %q", store)
	}
	srv := api.NewServer(st, logger)
	srv.Capabilities = caps
	if err := srv.Open("127.0.0.1:0"); err != nil {
		return err
	}
	defer srv.Close(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	http.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	})
	go http.Serve(ln, http.DefaultServeMux)
	if err := writeAtomic(pprofFile, ln.Addr().String()); err != nil {
		return err
	}
	if err := writeAtomic(addrFile, srv.Addr()); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// nullStore keeps nothing: writes succeed, reads find nothing.
func nullStore() *apitest.Store {
	notFound := saver.Errorf(saver.ENOTFOUND, "The null store keeps nothing.")
	return &apitest.Store{
		PutCheckpointFn: func(context.Context, saver.PutCheckpoint) error { return nil },
		PutWritesFn:     func(context.Context, saver.PutWrites) error { return nil },
		GetTupleFn:      func(context.Context, saver.CheckpointRef) (*saver.Tuple, error) { return nil, notFound },
		ListCheckpointsFn: func(context.Context, saver.ListFilter) ([]*saver.Tuple, error) {
			return nil, nil
		},
	}
}

func writeAtomic(path, data string) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(data+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
