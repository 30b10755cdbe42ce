package resume

import (
	"context"

	"github.com/saver-dev/saver"
	"github.com/saver-dev/saver/tree"
	"github.com/saver-dev/saver/valueview"
)

// messageLimits decode messages whole: a value is already bounded by the
// service's value size, and a message cut short would mislead a model.
var messageLimits = valueview.Limits{Depth: 64, Items: 1 << 30}

// removeAll is langgraph's REMOVE_ALL_MESSAGES: a RemoveMessage with this id
// clears every message before it.
const removeAll = "__remove_all__"

// LiveMessage is a message as LangChain's messages_to_dict writes it, which
// messages_from_dict (Python) and mapStoredMessagesToChatMessages (JS)
// turn back into message objects.
type LiveMessage struct {
	Type string `json:"type" msgpack:"type"`
	Data any    `json:"data" msgpack:"data"`
}

// Messages returns the messages written on the live path that ends at head,
// in order, as the add_messages reducer keeps them: a message whose id was
// seen replaces it in place, a RemoveMessage removes its id. Writes on an
// abandoned branch, and writes left behind by a fork or update at a live
// checkpoint, are not read.
func Messages(ctx context.Context, g Getter, tenant string, head *tree.Node) ([]LiveMessage, error) {
	path := head.Path()
	var out []*LiveMessage
	byID := make(map[string]int)
	for i, n := range path {
		var next *tree.Node
		if i+1 < len(path) {
			next = path[i+1]
		}
		if !carried(n, next) && n.Source != sourceUpdate {
			continue
		}
		tup, err := g.GetTuple(ctx, saver.CheckpointRef{Tenant: tenant, ThreadID: n.ThreadID, NS: n.NS, ID: n.ID})
		if err != nil {
			return nil, err
		}
		if n.Source == sourceUpdate {
			// update_state leaves no writes: its checkpoint's values are
			// the messages as they now stand, whatever it changed.
			out, byID = nil, make(map[string]int)
			for _, b := range tup.Values {
				for _, m := range valueview.Messages(valueview.Decode(b.Value, messageLimits)) {
					add(&out, byID, m)
				}
			}
		}
		if !carried(n, next) {
			continue
		}
		for _, w := range tup.Writes {
			if w.Idx < 0 || hidden(w.Channel) {
				continue
			}
			for _, m := range valueview.Messages(valueview.Decode(w.Value, messageLimits)) {
				add(&out, byID, m)
			}
		}
	}
	kept := []LiveMessage{}
	for _, m := range out {
		if m != nil {
			kept = append(kept, *m)
		}
	}
	return kept, nil
}

// add merges m into out as add_messages does.
func add(out *[]*LiveMessage, byID map[string]int, m valueview.Message) {
	j, seen := byID[m.ID]
	switch {
	case m.Role == "remove" && m.ID == removeAll:
		*out = nil
		clear(byID)
	case m.Role == "remove":
		if seen {
			(*out)[j] = nil
			delete(byID, m.ID)
		}
	case seen && m.ID != "":
		(*out)[j] = &LiveMessage{Type: m.Role, Data: m.Data.JSON()}
	default:
		if m.ID != "" {
			byID[m.ID] = len(*out)
		}
		*out = append(*out, &LiveMessage{Type: m.Role, Data: m.Data.JSON()})
	}
}
