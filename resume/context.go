// Package resume builds what a resumed agent is given: the live path of a
// thread with what each step did (the nodes that ran, the channels they
// wrote and a bounded rendering of the values), failed and abandoned
// attempts collapsed to one line each, and the live path's messages alone.
// It reads the thread's tree (tree) and the writes stored against the live
// path's checkpoints, decoding values only for display (valueview).
package resume

import (
	"context"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/tree"
	"github.com/saver-dev/saver/valueview"
)

// Getter reads one checkpoint with its writes; saver.Store is one.
type Getter interface {
	GetTuple(ctx context.Context, ref saver.CheckpointRef) (*saver.Tuple, error)
}

// Options shape a Context.
type Options struct {
	// Limit keeps the last Limit steps of the live path; 0 keeps all.
	Limit int
	// ValueBytes cuts each value's rendering at this many bytes.
	ValueBytes int
}

// DefaultValueBytes is Options.ValueBytes when the caller sets none.
const DefaultValueBytes = 200

// Context is the live path as an agent resumes from it.
type Context struct {
	ThreadID string `json:"thread_id" msgpack:"thread_id"`
	NS       string `json:"checkpoint_ns" msgpack:"checkpoint_ns"`
	// LeftOut counts the earlier steps Options.Limit left out.
	LeftOut int    `json:"left_out" msgpack:"left_out"`
	Steps   []Step `json:"steps" msgpack:"steps"`
}

// Step is one checkpoint of the live path and what ran after it.
type Step struct {
	CheckpointID string      `json:"checkpoint_id" msgpack:"checkpoint_id"`
	NS           string      `json:"checkpoint_ns" msgpack:"checkpoint_ns"`
	Step         int64       `json:"step" msgpack:"step"`
	Source       string      `json:"source" msgpack:"source"`
	Status       tree.Status `json:"status" msgpack:"status"`
	// Tasks are the tasks run from this checkpoint whose writes the live
	// path went on with, in LangGraph's order (task path, task id). A
	// failed task is here with its error; a paused one with its interrupt.
	Tasks []Task `json:"tasks" msgpack:"tasks"`
	// Abandoned are the branches left behind at this checkpoint, one each.
	Abandoned []Abandoned `json:"abandoned" msgpack:"abandoned"`
}

// Task is one task's writes.
type Task struct {
	// Node is the node that ran, from the task path: a pull task names
	// it; a push task (Send) is named by the Send it ran.
	Node     string `json:"node" msgpack:"node"`
	TaskID   string `json:"task_id" msgpack:"task_id"`
	TaskPath string `json:"task_path" msgpack:"task_path"`
	// Error and Interrupt are the rendered error or interrupt write.
	Error     string  `json:"error,omitempty" msgpack:"error,omitempty"`
	Interrupt string  `json:"interrupt,omitempty" msgpack:"interrupt,omitempty"`
	Writes    []Wrote `json:"writes" msgpack:"writes"`
}

// Wrote is one write: its channel, its value rendered, and the messages it
// holds (role and text).
type Wrote struct {
	Channel  string    `json:"channel" msgpack:"channel"`
	Value    string    `json:"value" msgpack:"value"`
	Messages []Message `json:"messages,omitempty" msgpack:"messages,omitempty"`
}

// Message is a message's role, id and text (cut at ValueBytes).
type Message struct {
	Role string `json:"role" msgpack:"role"`
	ID   string `json:"id,omitempty" msgpack:"id,omitempty"`
	Text string `json:"text" msgpack:"text"`
}

// Abandoned is an abandoned branch in one line: where it started, how long
// it ran, and how it ended (the error, when an error write says so).
type Abandoned struct {
	From        string      `json:"from" msgpack:"from"`
	Checkpoints int         `json:"checkpoints" msgpack:"checkpoints"`
	Status      tree.Status `json:"status" msgpack:"status"`
	Error       string      `json:"error,omitempty" msgpack:"error,omitempty"`
}

// hidden channels are LangGraph's control flow: edges taken and scheduling.
func hidden(channel string) bool {
	return strings.HasPrefix(channel, "branch:") || channel == saver.ChannelScheduled
}

// Build returns the context of the live path that ends at head (a node of
// t; the thread's head for the root namespace), reading each step's writes
// through g.
func Build(ctx context.Context, g Getter, tenant string, t *tree.Tree, head *tree.Node, o Options) (*Context, error) {
	if o.ValueBytes <= 0 {
		o.ValueBytes = DefaultValueBytes
	}
	path := head.Path()
	out := &Context{ThreadID: head.ThreadID, NS: head.NS, Steps: []Step{}}
	if o.Limit > 0 && len(path) > o.Limit {
		out.LeftOut = len(path) - o.Limit
		path = path[out.LeftOut:]
	}
	abandoned := make(map[string][]tree.Branch)
	for _, b := range t.Abandoned() {
		abandoned[b.ForkPoint] = append(abandoned[b.ForkPoint], b)
	}
	seen := make(map[string]bool) // ids of the messages shown so far
	for i, n := range path {
		s := Step{CheckpointID: n.ID, NS: n.NS, Step: n.Step, Source: n.Source, Status: n.Status(),
			Tasks: []Task{}, Abandoned: []Abandoned{}}
		var next *tree.Node
		if i+1 < len(path) {
			next = path[i+1]
		}
		var tup *saver.Tuple
		if carried(n, next) || n.Source == sourceUpdate {
			var err error
			tup, err = g.GetTuple(ctx, saver.CheckpointRef{Tenant: tenant, ThreadID: n.ThreadID, NS: n.NS, ID: n.ID})
			if err != nil {
				return nil, err
			}
		}
		if n.Source == sourceUpdate {
			if t, ok := updated(tup, seen, o); ok {
				s.Tasks = append(s.Tasks, t)
			}
		}
		if carried(n, next) {
			for _, t := range tasksOf(tup, o) {
				for _, w := range t.Writes {
					for _, m := range w.Messages {
						seen[m.ID] = true
					}
				}
				s.Tasks = append(s.Tasks, t)
			}
		}
		for _, b := range abandoned[n.ID] {
			if n.NS != "" {
				break
			}
			a, err := collapse(ctx, g, tenant, n, b, o)
			if err != nil {
				return nil, err
			}
			s.Abandoned = append(s.Abandoned, a)
		}
		out.Steps = append(out.Steps, s)
	}
	return out, nil
}

// carried says whether the writes stored on n are part of the live path:
// they are when the live path goes on from n by running them (a "loop"
// child, or a subgraph's run), or when n is where it ends. A "fork" or
// "update" child starts over from a copy of n, so n's writes belong to the
// continuation it left behind.
func carried(n, next *tree.Node) bool {
	return next == nil || next.NS != n.NS || next.Source == "loop"
}

// sourceUpdate is the source of a checkpoint update_state made. Its changes
// are in its channel values, not in writes.
const sourceUpdate = "update"

// updated returns what an update_state checkpoint added: the messages in its
// channel values that the path has not shown yet, as a task of node
// "update_state".
func updated(tup *saver.Tuple, seen map[string]bool, o Options) (Task, bool) {
	t := Task{Node: "update_state", Writes: []Wrote{}}
	for _, b := range tup.Values {
		wr := Wrote{Channel: b.Channel}
		for _, m := range valueview.Messages(valueview.Decode(b.Value, messageLimits)) {
			if m.ID != "" && seen[m.ID] {
				continue
			}
			seen[m.ID] = true
			wr.Messages = append(wr.Messages, Message{Role: m.Role, ID: m.ID, Text: cut(m.Text, o.ValueBytes)})
		}
		if len(wr.Messages) > 0 {
			wr.Value = strconv.Itoa(len(wr.Messages)) + " new messages"
			t.Writes = append(t.Writes, wr)
		}
	}
	return t, len(t.Writes) > 0
}

// tasksOf groups the writes stored on a checkpoint by task.
func tasksOf(tup *saver.Tuple, o Options) []Task {
	sends := pendingSends(tup)
	lim := valueview.DefaultLimits
	lim.Bytes = o.ValueBytes
	tasks := []Task{}
	for _, w := range tup.Writes {
		if len(tasks) == 0 || tasks[len(tasks)-1].TaskID != w.TaskID || tasks[len(tasks)-1].TaskPath != w.TaskPath {
			tasks = append(tasks, Task{Node: nodeName(w.TaskPath, w.TaskID, sends), TaskID: w.TaskID, TaskPath: w.TaskPath, Writes: []Wrote{}})
		}
		t := &tasks[len(tasks)-1]
		v := valueview.Decode(w.Value, lim)
		switch {
		case w.Channel == saver.ChannelError:
			t.Error = plain(v, o.ValueBytes)
		case w.Channel == saver.ChannelInterrupt:
			t.Interrupt = plain(v, o.ValueBytes)
		case hidden(w.Channel) || w.Channel == saver.ChannelResume:
		default:
			wr := Wrote{Channel: w.Channel, Value: valueview.Render(v, o.ValueBytes)}
			for _, m := range valueview.Messages(v) {
				wr.Messages = append(wr.Messages, Message{Role: m.Role, ID: m.ID,
					Text: cut(m.Text, o.ValueBytes)})
			}
			t.Writes = append(t.Writes, wr)
		}
	}
	// A task that only took an edge says nothing an agent needs.
	kept := tasks[:0]
	for _, t := range tasks {
		if len(t.Writes) > 0 || t.Error != "" || t.Interrupt != "" {
			kept = append(kept, t)
		}
	}
	return kept
}

// pendingSends returns the node of each Send pending at the checkpoint (its
// __pregel_tasks value), which push tasks' paths index.
func pendingSends(tup *saver.Tuple) []string {
	var out []string
	for _, b := range tup.Values {
		if b.Channel != "__pregel_tasks" {
			continue
		}
		v := valueview.Decode(b.Value, valueview.DefaultLimits)
		for _, e := range v.Items {
			node := ""
			if e.Kind == valueview.Object && e.Name == "Send" && len(e.Items) == 1 && len(e.Items[0].Items) > 0 {
				node = e.Items[0].Items[0].Str()
			}
			out = append(out, node)
		}
	}
	return out
}

// nodeName names a task's node from its path, LangGraph's task_path_str:
// "~__pregel_pull, agent" for a node run by an edge, "~__pregel_push, 1, …"
// for the second Send pending at the checkpoint. Without a path (older
// clients) the task id stands in.
func nodeName(path, taskID string, sends []string) string {
	parts := strings.Split(strings.TrimPrefix(path, "~"), ", ")
	switch {
	case len(parts) >= 2 && parts[0] == "__pregel_pull":
		return parts[1]
	case len(parts) >= 2 && parts[0] == "__pregel_push":
		i, ok := index(parts[1])
		if ok && i < len(sends) && sends[i] != "" {
			return sends[i]
		}
		return "push task"
	case path != "":
		return path
	}
	return "task " + taskID
}

// index parses task_path_str's zero-padded index.
func index(s string) (int, bool) {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' || n > 1<<20 {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, s != ""
}

// collapse reads how an abandoned branch ended: the error on its leaf, or
// the error of the attempt from n that it continued.
func collapse(ctx context.Context, g Getter, tenant string, n *tree.Node, b tree.Branch, o Options) (Abandoned, error) {
	a := Abandoned{From: b.From, Checkpoints: len(b.IDs), Status: b.Status}
	if b.Status != tree.StatusError {
		return a, nil
	}
	leaf := b.IDs[len(b.IDs)-1]
	tup, err := g.GetTuple(ctx, saver.CheckpointRef{Tenant: tenant, ThreadID: n.ThreadID, ID: leaf})
	if err != nil {
		return a, err
	}
	for _, w := range tup.Writes {
		if w.Channel == saver.ChannelError {
			a.Error = plain(valueview.Decode(w.Value, valueview.DefaultLimits), o.ValueBytes)
			break
		}
	}
	return a, nil
}

// plain renders a value for a line of text: a string as its text (LangGraph
// writes an error as its repr), anything else as Render does.
func plain(v valueview.Value, max int) string {
	if v.Kind == valueview.String {
		return cut(v.Text, max)
	}
	return valueview.Render(v, max)
}

// cut keeps s within max bytes, ending it with "…" on a rune boundary.
func cut(s string, max int) string {
	const ellipsis = "…"
	if len(s) <= max {
		return s
	}
	n := max - len(ellipsis)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	if n < 0 {
		return ""
	}
	return s[:n] + ellipsis
}
