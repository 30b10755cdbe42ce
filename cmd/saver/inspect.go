package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/valueview"
)

const inspectUsage = `usage: saver inspect [flags] COMMAND ...

Commands, against a running service (-url, or SAVER_URL):
  threads                     list threads, newest activity first
  tree THREAD                 draw the thread's checkpoint tree (live path, abandoned attempts)
  checkpoint THREAD [ID]      one checkpoint's metadata, channel sizes and pending writes (latest by default);
                              -values also shows the values and writes, decoded by the service
  diff THREAD ID1 ID2         which channels changed version between two checkpoints
  namespaces                  the Store's namespaces that hold items (-prefix, -max-depth)
  items NAMESPACE             items under a namespace prefix, newest update first (-filter, -offset)
  item NAMESPACE KEY          one item's value and times

A namespace is its labels joined by dots, as LangGraph writes it
(users.u1.memories); labels cannot hold a dot. Flags may follow the command.

Flags:
`

// inspector reads a running service through its HTTP API.
type inspector struct {
	url, key string
	ns       string
	limit    int
	json     bool
	values   bool
	client   *http.Client
	out      io.Writer

	// The Store's commands.
	prefix   string
	maxDepth int
	filter   string
	offset   int
}

// runInspect is `saver inspect`: it parses flags and runs one command.
func runInspect(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	in := &inspector{client: &http.Client{Timeout: 30 * time.Second}, out: stdout}
	fs := flag.NewFlagSet("saver inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, inspectUsage); fs.PrintDefaults() }
	def := getenv("SAVER_URL")
	if def == "" {
		def = "http://127.0.0.1:7878"
	}
	fs.StringVar(&in.url, "url", def, "service base URL (env SAVER_URL)")
	fs.StringVar(&in.key, "api-key", getenv("SAVER_API_KEY"), "API key (env SAVER_API_KEY)")
	fs.StringVar(&in.ns, "ns", "", "checkpoint namespace (checkpoint, diff)")
	fs.IntVar(&in.limit, "limit", 50, "most threads, namespaces or items to list")
	fs.BoolVar(&in.json, "json", false, "print JSON for scripts")
	fs.BoolVar(&in.values, "values", false, "checkpoint: show the values and writes decoded (messages as a conversation)")
	fs.StringVar(&in.prefix, "prefix", "", "namespaces: only those under this namespace (labels joined by dots)")
	fs.IntVar(&in.maxDepth, "max-depth", 0, "namespaces: cut namespaces to this many labels (0: whole)")
	fs.StringVar(&in.filter, "filter", "", `items: a JSON filter on the values, as BaseStore.search takes it ({"type": "note"})`)
	fs.IntVar(&in.offset, "offset", 0, "items, namespaces: skip this many first")
	a, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	in.url = strings.TrimRight(in.url, "/")
	if len(a) == 0 {
		fs.Usage()
		return errors.New("inspect: a command is required")
	}
	switch {
	case a[0] == "threads" && len(a) == 1:
		return in.threads(ctx)
	case a[0] == "tree" && len(a) == 2:
		return in.tree(ctx, a[1])
	case a[0] == "checkpoint" && (len(a) == 2 || len(a) == 3):
		id := ""
		if len(a) == 3 {
			id = a[2]
		}
		return in.checkpoint(ctx, a[1], id)
	case a[0] == "diff" && len(a) == 4:
		return in.diff(ctx, a[1], a[2], a[3])
	case a[0] == "namespaces" && len(a) == 1:
		return in.namespaces(ctx)
	case a[0] == "items" && len(a) == 2:
		return in.items(ctx, a[1])
	case a[0] == "item" && len(a) == 3:
		return in.item(ctx, a[1], a[2])
	}
	fs.Usage()
	return fmt.Errorf("inspect: bad command %q", strings.Join(a, " "))
}

// parseInterspersed parses flags wherever they are among the arguments
// (`items users.u1 -limit 5`) and returns the others in order; after "--"
// every argument is one of the others.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		left := fs.Args()
		// flag stops at the first argument that is not a flag, or drops a
		// "--" and stops after it.
		if len(left) == 0 {
			return rest, nil
		}
		if consumed := len(args) - len(left); consumed > 0 && args[consumed-1] == "--" {
			return append(rest, left...), nil
		}
		rest = append(rest, left[0])
		args = left[1:]
	}
}

// call sends one JSON request and decodes the JSON answer into out.
func (in *inspector) call(ctx context.Context, method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, in.url+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if in.key != "" {
		req.Header.Set("Authorization", "Bearer "+in.key)
	}
	resp, err := in.client.Do(req)
	if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("inspect: read answer: %w", err)
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
			return &httpError{resp.StatusCode, fmt.Sprintf("inspect: %s (%d %s)", e.Error.Message, resp.StatusCode, e.Error.Code)}
		}
		return &httpError{resp.StatusCode, fmt.Sprintf("inspect: %s %s: %d", method, path, resp.StatusCode)}
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// httpError is an answer with an error status.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func (in *inspector) print(v any, text func(w io.Writer)) error {
	if in.json {
		enc := json.NewEncoder(in.out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	text(in.out)
	return nil
}

func threadPath(id string) string { return "/v1/threads/" + url.PathEscape(id) }

type tupleJSON struct {
	ThreadID        string            `json:"thread_id"`
	CheckpointNS    string            `json:"checkpoint_ns"`
	CheckpointID    string            `json:"checkpoint_id"`
	ParentID        string            `json:"parent_checkpoint_id"`
	Metadata        map[string]any    `json:"metadata"`
	ChannelVersions map[string]string `json:"channel_versions"`
	Values          []struct {
		Channel string `json:"channel"`
		Version string `json:"version"`
		Value   struct {
			Type string `json:"type"`
			Data []byte `json:"data"`
		} `json:"value"`
	} `json:"values"`
	Writes []struct {
		TaskID  string `json:"task_id"`
		Idx     int64  `json:"idx"`
		Channel string `json:"channel"`
		Value   struct {
			Data []byte `json:"data"`
		} `json:"value"`
	} `json:"writes"`
	Scope     string `json:"scope"`
	ExpiresAt int64  `json:"expires_at"`
}

type threadSummary struct {
	ThreadID    string `json:"thread_id"`
	Latest      string `json:"latest_checkpoint_id"`
	Step        any    `json:"step"`
	Source      any    `json:"source"`
	Checkpoints int    `json:"checkpoints_seen"`
}

// threads walks the tenant's checkpoints newest first and keeps the first
// `limit` distinct threads: the threads with the most recent activity.
func (in *inspector) threads(ctx context.Context) error {
	var order []string
	seen := map[string]*threadSummary{}
	var cursor *string
	for pages := 0; pages < 1000; pages++ {
		var page struct {
			Tuples     []tupleJSON `json:"tuples"`
			NextCursor *string     `json:"next_cursor"`
		}
		if err := in.call(ctx, "POST", "/v1/checkpoints/search", map[string]any{"cursor": cursor}, &page); err != nil {
			return err
		}
		for _, t := range page.Tuples {
			if s := seen[t.ThreadID]; s != nil {
				s.Checkpoints++
				continue
			}
			if len(order) == in.limit {
				continue
			}
			seen[t.ThreadID] = &threadSummary{ThreadID: t.ThreadID, Latest: t.CheckpointID,
				Step: t.Metadata["step"], Source: t.Metadata["source"], Checkpoints: 1}
			order = append(order, t.ThreadID)
		}
		if page.NextCursor == nil {
			break
		}
		cursor = page.NextCursor
	}
	out := make([]threadSummary, 0, len(order))
	for _, id := range order {
		out = append(out, *seen[id])
	}
	return in.print(out, func(w io.Writer) {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "THREAD\tLATEST CHECKPOINT\tSTEP\tSOURCE\tCHECKPOINTS")
		for _, s := range out {
			fmt.Fprintf(tw, "%s\t%s\t%v\t%v\t%d\n", s.ThreadID, s.Latest, s.Step, s.Source, s.Checkpoints)
		}
		tw.Flush()
	})
}

func (in *inspector) tree(ctx context.Context, thread string) error {
	if in.json {
		var t any
		if err := in.call(ctx, "GET", threadPath(thread)+"/tree", nil, &t); err != nil {
			return err
		}
		return in.print(t, nil)
	}
	var c struct{ Text, Drawing string }
	if err := in.call(ctx, "GET", threadPath(thread)+"/tree/context", nil, &c); err != nil {
		return err
	}
	fmt.Fprintf(in.out, "%s\n\nlive path:\n%s\n", strings.TrimRight(c.Drawing, "\n"), strings.TrimRight(c.Text, "\n"))
	return nil
}

func (in *inspector) get(ctx context.Context, thread, id string) (*tupleJSON, error) {
	q := url.Values{"checkpoint_ns": {in.ns}}
	if id != "" {
		q.Set("checkpoint_id", id)
	}
	var t tupleJSON
	if err := in.call(ctx, "GET", threadPath(thread)+"/checkpoint?"+q.Encode(), nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

type channelInfo struct {
	Channel string `json:"channel"`
	Version string `json:"version"`
	Type    string `json:"type"`
	Bytes   int    `json:"bytes"`
}

func (in *inspector) checkpoint(ctx context.Context, thread, id string) error {
	t, err := in.get(ctx, thread, id)
	if err != nil {
		return err
	}
	var chans []channelInfo
	for _, v := range t.Values {
		chans = append(chans, channelInfo{v.Channel, v.Version, v.Value.Type, len(v.Value.Data)})
	}
	type writeInfo struct {
		TaskID  string `json:"task_id"`
		Idx     int64  `json:"idx"`
		Channel string `json:"channel"`
		Bytes   int    `json:"bytes"`
	}
	var writes []writeInfo
	for _, w := range t.Writes {
		writes = append(writes, writeInfo{w.TaskID, w.Idx, w.Channel, len(w.Value.Data)})
	}
	deltas, err := in.deltas(ctx, t)
	if err != nil {
		return err
	}
	v := map[string]any{"thread_id": t.ThreadID, "checkpoint_ns": t.CheckpointNS, "checkpoint_id": t.CheckpointID,
		"parent_checkpoint_id": t.ParentID, "metadata": t.Metadata, "channels": chans, "writes": writes,
		"delta_channels": deltas, "scope": t.Scope, "expires_at": t.ExpiresAt}
	var shown *valueview.Checkpoint
	if in.values {
		// The same checkpoint by id: "the latest" could have moved since.
		q := url.Values{"checkpoint_ns": {t.CheckpointNS}, "checkpoint_id": {t.CheckpointID}}
		shown = new(valueview.Checkpoint)
		if err := in.call(ctx, "GET", threadPath(thread)+"/checkpoint/values?"+q.Encode(), nil, shown); err != nil {
			return err
		}
		v["shown"] = shown
	}
	return in.print(v, func(w io.Writer) {
		fmt.Fprintf(w, "checkpoint %s  (thread %s, ns %q)\nparent     %s\n", t.CheckpointID, t.ThreadID, t.CheckpointNS, orNone(t.ParentID))
		if t.ExpiresAt != 0 {
			fmt.Fprintf(w, "expires    %s (%s)\n", time.Unix(t.ExpiresAt, 0).UTC().Format(time.RFC3339), t.Scope)
		}
		keys := make([]string, 0, len(t.Metadata))
		for k := range t.Metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintln(w, "metadata:")
		for _, k := range keys {
			b, _ := json.Marshal(t.Metadata[k])
			fmt.Fprintf(w, "  %s = %s\n", k, b)
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "CHANNEL\tVERSION\tTYPE\tBYTES")
		for _, c := range chans {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", c.Channel, c.Version, c.Type, c.Bytes)
		}
		tw.Flush()
		if len(deltas) > 0 {
			fmt.Fprintln(w, "DeltaChannels (no value here; rebuilt from the writes since their snapshot):")
			for _, d := range deltas {
				from := "from the thread's start (no snapshot yet)"
				if d.SeedBytes != nil {
					from = fmt.Sprintf("after a snapshot of %d bytes", *d.SeedBytes)
				}
				fmt.Fprintf(w, "  %s  %d writes (%d bytes) %s\n", d.Channel, d.Writes, d.WriteBytes, from)
			}
		}
		fmt.Fprintf(w, "pending writes: %d\n", len(writes))
		for _, wr := range writes {
			fmt.Fprintf(w, "  task %s idx %d %s (%d bytes)\n", wr.TaskID, wr.Idx, wr.Channel, wr.Bytes)
		}
		if shown != nil {
			printShown(w, shown)
		}
	})
}

// deltaInfo is a DeltaChannel of a checkpoint as inspect shows it: the size
// of its history, which readers replay to rebuild its value.
type deltaInfo struct {
	Channel    string `json:"channel"`
	Writes     int    `json:"writes"`
	WriteBytes int    `json:"write_bytes"`
	SeedBytes  *int   `json:"snapshot_bytes"`
}

// deltas asks the service for the history of each DeltaChannel of t that
// has no value there: those LangGraph's metadata counts (saver.Metadata's
// DeltaChannels) with a version.
func (in *inspector) deltas(ctx context.Context, t *tupleJSON) ([]deltaInfo, error) {
	valued := map[string]bool{}
	for _, v := range t.Values {
		valued[v.Channel] = true
	}
	var channels []string
	for _, ch := range saver.Metadata(t.Metadata).DeltaChannels() {
		if _, ok := t.ChannelVersions[ch]; ok && !valued[ch] {
			channels = append(channels, ch)
		}
	}
	if len(channels) == 0 {
		return nil, nil
	}
	var resp struct {
		Channels map[string]struct {
			Writes []struct {
				Value struct {
					Data []byte `json:"data"`
				} `json:"value"`
			} `json:"writes"`
			Seed *struct {
				Data []byte `json:"data"`
			} `json:"seed"`
		} `json:"channels"`
	}
	body := map[string]any{"checkpoint_ns": t.CheckpointNS, "checkpoint_id": t.CheckpointID, "channels": channels}
	if err := in.call(ctx, "POST", threadPath(t.ThreadID)+"/delta-history", body, &resp); err != nil {
		return nil, err
	}
	out := make([]deltaInfo, 0, len(channels))
	for _, ch := range channels {
		h := resp.Channels[ch]
		d := deltaInfo{Channel: ch, Writes: len(h.Writes)}
		for _, w := range h.Writes {
			d.WriteBytes += len(w.Value.Data)
		}
		if h.Seed != nil {
			d.SeedBytes = new(len(h.Seed.Data))
		}
		out = append(out, d)
	}
	return out, nil
}

type versionChange struct {
	Channel string `json:"channel"`
	From    string `json:"from"`
	To      string `json:"to"`
}

func (in *inspector) diff(ctx context.Context, thread, a, b string) error {
	ta, err := in.get(ctx, thread, a)
	if err != nil {
		return err
	}
	tb, err := in.get(ctx, thread, b)
	if err != nil {
		return err
	}
	names := map[string]bool{}
	for k := range ta.ChannelVersions {
		names[k] = true
	}
	for k := range tb.ChannelVersions {
		names[k] = true
	}
	var changes []versionChange
	for k := range names {
		if va, vb := ta.ChannelVersions[k], tb.ChannelVersions[k]; va != vb {
			changes = append(changes, versionChange{k, va, vb})
		}
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Channel < changes[j].Channel })
	return in.print(changes, func(w io.Writer) {
		if len(changes) == 0 {
			fmt.Fprintln(w, "no channel changed version")
			return
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "CHANNEL\t%s\t%s\n", a, b)
		for _, c := range changes {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Channel, orNone(c.From), orNone(c.To))
		}
		tw.Flush()
	})
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
