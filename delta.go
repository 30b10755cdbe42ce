package saver

import "slices"

// LangGraph's DeltaChannel (beta) stores no value at most checkpoints: its
// channel version moves, the blob put for it is empty, and readers rebuild
// the value by replaying the writes of the checkpoint's ancestors, back to
// the nearest one that holds a stored value (a snapshot LangGraph writes
// every so many updates, or a plain value from before the channel was a
// DeltaChannel). A DeltaHistory is that replay's input, as
// BaseCheckpointSaver.get_delta_channel_history returns it.

// MaxDeltaChannels bounds the channels of one delta history request.
const MaxDeltaChannels = 256

// DeltaRequest asks for the delta histories of channels at a checkpoint.
type DeltaRequest struct {
	// CheckpointRef names the target; an empty ID means the latest of its
	// namespace.
	CheckpointRef
	Channels []string
	// MaxBytes, when positive, bounds one answer: the walk ends after the
	// first ancestor at which the writes and seeds taken reach it, and the
	// channels still walking say where their history goes on
	// (DeltaHistory.Next). 0: the whole history at once.
	MaxBytes int64
	// Known, when not empty, names an ancestor of the target whose
	// history (these channels', seed included) the client holds already:
	// the walk takes its writes and seeds and stops there, and the
	// channels still walking say so with Next Known, so that an answer
	// holds only what is new since the client's last read of the chain.
	// A walk that ends without meeting it, channels still walking, fails
	// with EINVALID: Known is no ancestor of the target.
	Known string
}

// Validate checks a delta history request.
func (r *DeltaRequest) Validate() error {
	if err := r.CheckpointRef.Validate(); err != nil {
		return err
	}
	if len(r.Channels) > MaxDeltaChannels {
		return Errorf(ETOOLARGE, "%d channels in one request; the limit is %d.", len(r.Channels), MaxDeltaChannels)
	}
	seen := make(map[string]bool, len(r.Channels))
	for _, ch := range r.Channels {
		if err := validID("channel", ch, true, MaxIDBytes); err != nil {
			return err
		}
		if seen[ch] {
			return Errorf(EINVALID, "Channel %s is given twice.", ch)
		}
		seen[ch] = true
	}
	if r.Known != "" {
		if err := validID("known", r.Known, false, MaxIDBytes); err != nil {
			return err
		}
		if r.Known == r.ID {
			return Errorf(EINVALID, "known: checkpoint %s is the target itself, not one of its ancestors.", r.Known)
		}
	}
	return nil
}

// DeltaHistory is one channel's history at a checkpoint.
type DeltaHistory struct {
	// Writes are the channel's writes stored against the target's
	// ancestors on its parent chain, from the seed's checkpoint (or the
	// root) to the target's parent, each checkpoint's in the order of
	// Tuple.Writes. The target's own writes are pending for its next step
	// and are not part of it.
	Writes []Write
	// Seed is the channel's value at the nearest ancestor that holds one
	// (not empty, not expired); nil when the walk reached the root without
	// finding any, which readers take as "start empty".
	Seed *Typed
	// Next, when not empty, says the walk stopped at the request's
	// MaxBytes: Writes are the newest part of the history, and what comes
	// before them is the channel's history at checkpoint Next (an ancestor
	// whose writes are in Writes already), seed included. Seed is then nil.
	Next string
}

// DeltaWalk accumulates delta histories over a checkpoint's ancestors,
// visited from the parent towards the root, exactly as the base class's
// walk does: at each ancestor it takes the writes to the channels still
// walking, then ends the walk of each channel the ancestor holds a value
// for, with that value as its seed. Stores drive it; the rule lives here.
type DeltaWalk struct {
	channels  []string
	remaining map[string]bool
	// visited holds, per channel, the writes of each ancestor visited,
	// nearest first.
	visited map[string][][]Write
	seeds   map[string]*Typed
	ids     map[string]bool
	// maxBytes bounds the writes and seeds taken (see Limit); bytes counts
	// them; next is the ancestor the walk stopped at, if it did.
	maxBytes, bytes int64
	next            string
	// known is the ancestor whose history the client holds (see
	// DeltaRequest.Known); met says the walk reached it.
	known string
	met   bool
}

// NewDeltaWalk starts a walk for channels.
func NewDeltaWalk(channels []string) *DeltaWalk {
	w := &DeltaWalk{
		channels:  channels,
		remaining: make(map[string]bool, len(channels)),
		visited:   make(map[string][][]Write, len(channels)),
		seeds:     make(map[string]*Typed, len(channels)),
		ids:       make(map[string]bool),
	}
	for _, ch := range channels {
		w.remaining[ch] = true
	}
	return w
}

// Limit makes the walk stop (see Stop) after the first ancestor at which
// the writes and seeds taken reach maxBytes; 0 takes the whole history.
func (w *DeltaWalk) Limit(maxBytes int64) { w.maxBytes = maxBytes }

// Known makes the walk stop at ancestor id, whose history the client
// holds (see DeltaRequest.Known), once it took id's writes and seeds.
func (w *DeltaWalk) Known(id string) { w.known = id }

// Stop ends the walk at id, an ancestor visited already: the channels still
// walking get Next id, their history before it left to another request.
func (w *DeltaWalk) Stop(id string) { w.next = id }

// Done reports whether every channel has its seed.
func (w *DeltaWalk) Done() bool { return len(w.remaining) == 0 }

// Walking reports whether channel still walks: no seed found for it yet.
func (w *DeltaWalk) Walking(channel string) bool { return w.remaining[channel] }

// Remaining returns the channels still walking, in request order.
func (w *DeltaWalk) Remaining() []string {
	var out []string
	for _, ch := range w.channels {
		if w.remaining[ch] {
			out = append(out, ch)
		}
	}
	return out
}

// Visit takes the next ancestor: its id, its writes in Tuple.Writes
// order, and its values by channel (nil unless present: not empty, not
// expired). It returns whether the walk goes on to the ancestor's parent:
// not when every channel has its seed, nor when id was visited already (a
// parent cycle, which only bad ids make; the ancestor is then not taken
// again), nor when the walk reached its Limit at this ancestor.
func (w *DeltaWalk) Visit(id string, writes []Write, seed func(channel string) *Typed) bool {
	if w.Done() || w.ids[id] {
		return false
	}
	w.ids[id] = true
	per := make(map[string][]Write)
	for _, wr := range writes {
		if w.remaining[wr.Channel] {
			per[wr.Channel] = append(per[wr.Channel], wr)
		}
	}
	for ch, ws := range per {
		w.visited[ch] = append(w.visited[ch], ws)
		for i := range ws {
			w.bytes += ws[i].Size()
		}
	}
	for _, ch := range w.channels {
		if !w.remaining[ch] {
			continue
		}
		if v := seed(ch); v != nil {
			w.seeds[ch] = v
			w.bytes += v.Size()
			delete(w.remaining, ch)
		}
	}
	if w.Done() {
		return false
	}
	if id == w.known {
		w.met = true
		w.Stop(id)
		return false
	}
	if w.maxBytes > 0 && w.bytes >= w.maxBytes {
		w.Stop(id)
		return false
	}
	return true
}

// Result returns the history of every channel asked for. With Known set,
// a walk that ended (at the root, a missing parent or a cycle) with
// channels still walking and without meeting it fails: the client named a
// checkpoint that is not an ancestor of the target, and the history it
// holds there is not part of this one.
func (w *DeltaWalk) Result() (map[string]*DeltaHistory, error) {
	if w.known != "" && !w.met && w.next == "" && !w.Done() {
		return nil, Errorf(EINVALID, "known: checkpoint %s is not an ancestor of the target (the chain of channels %v ends without it).", w.known, w.Remaining())
	}
	out := make(map[string]*DeltaHistory, len(w.channels))
	for _, ch := range w.channels {
		h := &DeltaHistory{Seed: w.seeds[ch], Writes: []Write{}}
		if w.remaining[ch] {
			h.Next = w.next
		}
		for _, ws := range slices.Backward(w.visited[ch]) {
			h.Writes = append(h.Writes, ws...)
		}
		out[ch] = h
	}
	return out, nil
}

// DeltaCountersKey is the metadata key in which LangGraph counts, per
// DeltaChannel, the updates and supersteps since its last snapshot; a
// channel is listed unless it was snapshotted at that very checkpoint, and
// the key is absent on threads that use no DeltaChannel. It is how the
// service knows, without decoding values, which channels need their chain.
const DeltaCountersKey = "counters_since_delta_snapshot"

// DeltaChannels returns the DeltaChannels that LangGraph's metadata counts
// at a checkpoint, sorted.
func (md Metadata) DeltaChannels() []string {
	counters, ok := md[DeltaCountersKey].(map[string]any)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(counters))
	for ch := range counters {
		out = append(out, ch)
	}
	slices.Sort(out)
	return out
}

// ChainNeeds returns the channels whose value at a checkpoint lives in its
// chain: the DeltaChannels md counts that have a version in versions and
// for which present reports no stored value.
func ChainNeeds(md Metadata, versions map[string]string, present func(channel string) bool) []string {
	var out []string
	for _, ch := range md.DeltaChannels() {
		if _, ok := versions[ch]; ok && !present(ch) {
			out = append(out, ch)
		}
	}
	return out
}

// ChainNode is a checkpoint as the delta-aware maintenance rules see it.
type ChainNode struct {
	ID, ParentID string
	// Needs are the channels whose value at this checkpoint lives in its
	// chain: DeltaChannels its metadata counts that have a version here
	// and no stored value (see Metadata.DeltaChannels).
	Needs []string
	// Seeds are the channels this checkpoint holds a stored value for.
	Seeds map[string]bool
}

// Chain returns the ids of the ancestors checkpoint n needs to rebuild its
// DeltaChannels, nearest first: every ancestor on its parent chain up to
// and including the nearest one that holds a seed for each channel it
// needs, or to the root. node looks a checkpoint of n's namespace up by id,
// nil when it is not stored; a missing parent ends the chain, as it ends a
// history walk.
func Chain(n *ChainNode, node func(id string) (*ChainNode, error)) ([]string, error) {
	if n == nil || len(n.Needs) == 0 {
		return nil, nil
	}
	needs := make(map[string]bool, len(n.Needs))
	for _, ch := range n.Needs {
		needs[ch] = true
	}
	var out []string
	seen := map[string]bool{n.ID: true}
	for id := n.ParentID; id != "" && len(needs) > 0 && !seen[id]; {
		p, err := node(id)
		if p == nil || err != nil {
			return out, err
		}
		seen[id] = true // a parent cycle (bad ids) ends the walk
		out = append(out, id)
		for ch := range needs {
			if p.Seeds[ch] {
				delete(needs, ch)
			}
		}
		id = p.ParentID
	}
	return out, nil
}

// Severs returns ECONFLICT when deleting the checkpoints in doomed would
// leave a checkpoint that stays without part of its Chain, nil otherwise.
// Only descendants of doomed checkpoints can need them, so those are the
// ones walked: children maps each checkpoint id of the namespace to its
// children's, and node looks a checkpoint up as for Chain.
func Severs(thread, ns string, doomed map[string]bool, children map[string][]string, node func(id string) (*ChainNode, error)) error {
	queue := make([]string, 0, len(doomed))
	for id := range doomed {
		queue = append(queue, id)
	}
	slices.Sort(queue) // the same answer every time
	seen := map[string]bool{}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		for _, child := range children[id] {
			if seen[child] {
				continue
			}
			seen[child] = true
			queue = append(queue, child)
			if doomed[child] {
				continue
			}
			n, err := node(child)
			if err != nil {
				return err
			}
			chain, err := Chain(n, node)
			if err != nil {
				return err
			}
			for _, a := range chain {
				if doomed[a] {
					return Errorf(ECONFLICT,
						"Thread %s, namespace %q: checkpoint %s stays and needs checkpoint %s to rebuild its DeltaChannels; delete the later runs too, or the thread.",
						thread, ns, child, a)
				}
			}
		}
	}
	return nil
}
