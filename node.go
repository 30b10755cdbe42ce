package saver

import "context"

// Node is a checkpoint seen as a node of its thread's tree: keys, the parent
// link and the few metadata fields tree answers show. Building nodes never
// needs a payload, so tree queries stay cheap on long threads.
type Node struct {
	ThreadID string `msgpack:"thread_id" json:"thread_id"`
	NS       string `msgpack:"checkpoint_ns" json:"checkpoint_ns"`
	ID       string `msgpack:"checkpoint_id" json:"checkpoint_id"`
	// ParentID is the parent checkpoint in the same namespace; "" for a root.
	ParentID string `msgpack:"parent_checkpoint_id" json:"parent_checkpoint_id"`
	// Parents is the metadata "parents" map (namespace -> checkpoint id) of
	// the graphs enclosing a subgraph; it hangs a subgraph's first checkpoint
	// under the parent-graph checkpoint that ran it.
	Parents map[string]string `msgpack:"parents,omitempty" json:"parents,omitempty"`
	Source  string            `msgpack:"source" json:"source"`
	Step    int64             `msgpack:"step" json:"step"`
	// HasError and HasInterrupt say whether pending writes on this checkpoint
	// hold an error or an interrupt: a failed or paused attempt.
	HasError     bool `msgpack:"has_error" json:"has_error"`
	HasInterrupt bool `msgpack:"has_interrupt" json:"has_interrupt"`
}

// TreeStore reads the nodes of a thread's checkpoint tree from keys, parent
// links and a few metadata fields, never from payloads.
type TreeStore interface {
	// ListNodes returns every checkpoint of the thread, in all namespaces, as
	// a node; HasError and HasInterrupt come from the keys of its pending
	// writes. Returns an empty slice for an unknown thread.
	ListNodes(ctx context.Context, tenant, threadID string) ([]Node, error)
}
