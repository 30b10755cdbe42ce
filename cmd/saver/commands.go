package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/saver-dev/saver/embedded"
)

// invocation is one command line: its arguments after the command, the
// environment and where output goes.
type invocation struct {
	args           []string
	getenv         func(string) string
	stdout, stderr io.Writer
}

// commands are the subcommands run dispatches to, by name.
var commands = map[string]func(context.Context, invocation) error{
	"serve":   serveUntilDone,
	"init":    initStore,
	"gc":      gc,
	"migrate": migrate,
	"backup":  backup,
	"restore": restore,
	"inspect": func(ctx context.Context, in invocation) error {
		return runInspect(ctx, in.args, in.getenv, in.stdout, in.stderr)
	},
	"version": func(_ context.Context, in invocation) error {
		_, err := fmt.Fprintln(in.stdout, version)
		return err
	},
}

// run dispatches a subcommand; it returns when the command is done or ctx ends.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	name := "serve"
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		name, args = args[0], args[1:]
	}
	cmd, ok := commands[name]
	if !ok {
		return fmt.Errorf("unknown command %q; commands: %s", name, strings.Join(slices.Sorted(maps.Keys(commands)), ", "))
	}
	return cmd(ctx, invocation{args: args, getenv: getenv, stdout: stdout, stderr: stderr})
}

// configured returns a Main with the invocation's configuration and a
// logger, for the commands that do not serve.
func configured(in invocation) (*Main, error) {
	m := NewMain(in.stderr)
	if err := m.ParseFlags(in.args, in.getenv); err != nil {
		return nil, err
	}
	m.initLogger()
	return m, nil
}

// serveUntilDone runs the service until ctx ends, then shuts it down.
func serveUntilDone(ctx context.Context, in invocation) error {
	m := NewMain(in.stderr)
	if err := m.ParseFlags(in.args, in.getenv); err != nil {
		return err
	}
	if err := m.Run(ctx); err != nil {
		m.Close(context.Background())
		return err
	}
	<-ctx.Done()
	return m.Close(context.Background())
}

// initStore creates the DynamoDB table and the bucket if they are missing.
func initStore(ctx context.Context, in invocation) error {
	m, err := configured(in)
	if err != nil {
		return err
	}
	st, err := openAWSFor(ctx, m, "init")
	if err != nil {
		return err
	}
	if err := st.Init(ctx); err != nil {
		return err
	}
	fmt.Fprintf(in.stdout, "table %s ready (TTL on expires_at)\n", m.Config.Table)
	if m.Config.Bucket != "" {
		fmt.Fprintf(in.stdout, "bucket %s ready\n", m.Config.Bucket)
	}
	return nil
}

// gc deletes what has expired once: the embedded store's expired items, or
// the offload bucket's orphaned objects.
func gc(ctx context.Context, in invocation) error {
	m, err := configured(in)
	if err != nil {
		return err
	}
	if m.Config.Store == StoreEmbedded {
		st, err := embedded.Open(m.Config.DBPath, embedded.WithLogger(m.Logger), embedded.WithReserve(m.Config.DiskReserve), embedded.WithTombstoneLifetime(m.Config.TombstoneLifetime))
		if err != nil {
			return err
		}
		defer st.Close()
		n, err := st.Sweep(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(in.stdout, "expired items deleted %d\n", n)
		return nil
	}
	st, err := openAWSFor(ctx, m, "gc")
	if err != nil {
		return err
	}
	w := st.sweeper()
	if w == nil {
		return errors.New("gc needs SAVER_BUCKET: without offload there is nothing to sweep")
	}
	res, err := w.Sweep(ctx, m.Config.SweepGrace)
	if err != nil {
		return err
	}
	fmt.Fprintf(in.stdout, "objects %d, threads checked %d, orphans deleted %d\n", res.Objects, res.Threads, res.Deleted)
	return nil
}

// openAWSFor opens the production store for a command that only works on it.
func openAWSFor(ctx context.Context, m *Main, cmd string) (*awsStore, error) {
	if m.Config.Store != StoreDynamoDB {
		return nil, fmt.Errorf("%s works on the dynamodb store; set SAVER_STORE=dynamodb", cmd)
	}
	return openAWS(ctx, m.Config, m.Logger)
}

// migrate moves an embedded store from a bbolt file to Pebble.
func migrate(ctx context.Context, in invocation) error {
	m, err := configured(in)
	if err != nil {
		return err
	}
	if m.Config.Store != StoreEmbedded {
		return errors.New("migrate moves an embedded store (SAVER_STORE=embedded) from a bbolt file to Pebble")
	}
	n, err := embedded.Migrate(ctx, m.Config.DBPath, m.Logger)
	if err != nil {
		return err
	}
	fmt.Fprintf(in.stdout, "%s: %d keys moved to Pebble; the old file is %s.bbolt, to delete once the service runs on the new store\n",
		m.Config.DBPath, n, m.Config.DBPath)
	return nil
}
