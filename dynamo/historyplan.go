package dynamo

import (
	"context"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/internal/awsx"
)

// historyPlan is where each channel's walk is expected to end.
type historyPlan struct {
	chain      []*histNode // the target's ancestors, nearest first, as far as any walk goes
	candidates map[seedAt]string
	outOfOrder bool
	// cut says the chain stops at the request's MaxBytes, with walks
	// that go on past it.
	cut bool
}

// plan follows the chain from the target's parent and finds, per channel,
// the nearest ancestor that holds a value of it, reading pages as needed;
// it goes no further than known, the ancestor whose history the client
// holds.
func (h *historyScan) plan(ctx context.Context, channels []string, maxBytes int64, known string) (*historyPlan, error) {
	if err := h.findLatest(ctx); err != nil {
		return nil, err
	}
	p := &historyPlan{candidates: map[seedAt]string{}}
	if h.target == "" {
		return p, nil
	}
	t, outOfOrder, err := h.node(ctx, h.target)
	if err != nil || outOfOrder || t == nil {
		p.outOfOrder = outOfOrder
		return p, err
	}
	p.chain = []*histNode{}
	remaining := channelSet(channels)
	seen := map[string]bool{t.id: true}
	var bytes int64
	for cur := t; cur.parent != "" && len(remaining) > 0; {
		if maxBytes > 0 && bytes >= maxBytes {
			p.cut = true
			break
		}
		a, outOfOrder, err := h.node(ctx, cur.parent)
		if err != nil || outOfOrder {
			p.outOfOrder = outOfOrder
			return p, err
		}
		if a == nil || seen[a.id] {
			break
		}
		seen[a.id] = true
		p.chain = append(p.chain, a)
		bytes += a.walkBytes(remaining)
		outOfOrder, err = h.endWalksAt(ctx, a, remaining, p.candidates)
		if err != nil || outOfOrder {
			p.outOfOrder = outOfOrder
			return p, err
		}
		if a.id == known {
			break // the walk stops here too (saver.DeltaWalk.Known)
		}
		cur = a
	}
	return p, nil
}

// findLatest reads pages, when the request named no target, until the
// first live checkpoint the scan meets, the latest, is the target; it
// stops without one when the namespace has none.
func (h *historyScan) findLatest(ctx context.Context) error {
	for h.target == "" {
		more, err := h.more(ctx)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// walkBytes is what a walk of channels holds of n's writes: those of the
// channels, and the bundles, which may hold any channel's write. The plan
// cuts the chain where these reach the request's MaxBytes.
func (n *histNode) walkBytes(channels map[string]bool) int64 {
	var bytes int64
	for _, it := range n.writes {
		if channels[getS(it, attrChannel)] || isBundle(it) {
			bytes += int64(awsx.ItemSize(it))
		}
	}
	if n.cached != nil {
		bytes += writesBytes(n.cached.writes, channels)
	}
	return bytes
}

// writesBytes is the size of the writes of channels among ws, decoded
// writes as the chain cache holds them.
func writesBytes(ws []saver.Write, channels map[string]bool) int64 {
	var bytes int64
	for i := range ws {
		if w := &ws[i]; channels[w.Channel] {
			bytes += w.Size()
		}
	}
	return bytes
}

// endWalksAt ends at ancestor a the walks of the remaining channels that a
// holds a value of: a becomes their candidate seed, and they leave
// remaining. True when the chain turns out of order.
func (h *historyScan) endWalksAt(ctx context.Context, a *histNode, remaining map[string]bool, candidates map[seedAt]string) (bool, error) {
	for ch := range remaining {
		holds, outOfOrder, err := h.holds(ctx, a, ch)
		if err != nil || outOfOrder {
			return outOfOrder, err
		}
		if holds {
			candidates[seedAt{a.id, ch}] = a.versions[ch]
			delete(remaining, ch)
		}
	}
	return false, nil
}

// holds reports whether checkpoint a may hold a value of channel: its
// version of the channel was brought, with a value, by a (or by the
// ancestor its version comes from, a fork's or an unchanged channel's), or
// it is not known where the version came from. Reads confirm it.
func (h *historyScan) holds(ctx context.Context, a *histNode, channel string) (bool, bool, error) {
	ver, ok := a.versions[channel]
	if !ok || h.absent[seedAt{a.id, channel}] {
		return false, false, nil
	}
	if v, ok := h.holding[[2]string{channel, ver}]; ok {
		return v, false, nil
	}
	holds, outOfOrder, err := h.origin(ctx, a, channel, ver)
	if err == nil && !outOfOrder {
		h.holding[[2]string{channel, ver}] = holds
	}
	return holds, outOfOrder, err
}

// origin goes down a's chain to the checkpoint that brought its version
// of channel and says whether that one brought a value; true when it cannot
// tell (an item older than attrBrought, or the chain cut short).
func (h *historyScan) origin(ctx context.Context, a *histNode, channel, ver string) (bool, bool, error) {
	seen := map[string]bool{}
	for n := a; ; {
		if b, ok := n.brought[channel]; ok {
			return b, false, nil
		}
		seen[n.id] = true
		if n.parent == "" || seen[n.parent] {
			return true, false, nil
		}
		p, outOfOrder, err := h.node(ctx, n.parent)
		if err != nil || outOfOrder {
			return false, outOfOrder, err
		}
		if p == nil || p.versions[channel] != ver {
			return true, false, nil
		}
		n = p
	}
}
