package lincheck

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// Outcome is what a client learned of a write: it applied, the store refused
// it (a condition failed, a key is unknown), or the client cannot tell (an
// error, a timeout, a connection cut by a kill), so it may or may not have
// applied. An unknown operation is recorded with an infinite return time:
// porcupine may place it anywhere after its call, after everything else
// being the same as never.
type Outcome int

const (
	Unknown Outcome = iota
	OK
	Refused  // 409: the condition (head, token) did not hold
	NotFound // 404: the ledger has no such key
)

func (o Outcome) String() string {
	return [...]string{"unknown", "ok", "refused", "not-found"}[o]
}

// Kinds of operation, one model each.
const (
	KindHead   = "head"
	KindLedger = "ledger"
	KindItem   = "item"
)

// HeadInput is an operation on a thread's head: a read of the latest
// checkpoint (Read), or a put of checkpoint ID conditional on the head
// being Expect (a compare-and-set).
type HeadInput struct {
	Thread string
	Read   bool
	Expect string
	ID     string
}

// HeadOutput is the head a read saw ("" for none), or a put's outcome.
type HeadOutput struct {
	Head    string
	Outcome Outcome
}

// HeadModel is a thread's head as a register with compare-and-set: a put
// applies iff the head is the one expected, and the head is then the newest
// of the two ids (the head is the newest checkpoint by id, as GetTuple's
// latest; a put of an older id stores it without moving the head).
var HeadModel = porcupine.Model{
	Partition: partition(func(in any) string { return in.(HeadInput).Thread }),
	Init:      func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		head, in, out := state.(string), input.(HeadInput), output.(HeadOutput)
		if in.Read {
			return out.Head == head, head
		}
		applies := head == in.Expect
		next := head
		if applies {
			next = max(head, in.ID)
		}
		switch out.Outcome {
		case OK:
			return applies, next
		case Refused:
			return !applies, head
		case Unknown:
			return true, next
		}
		return false, head
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(HeadInput), output.(HeadOutput)
		if in.Read {
			return fmt.Sprintf("%s: head -> %q", in.Thread, out.Head)
		}
		return fmt.Sprintf("%s: put %s if head=%q -> %s", in.Thread, in.ID, in.Expect, out.Outcome)
	},
	DescribeState: func(state any) string { return fmt.Sprintf("head %q", state) },
}

// LedgerInput is a claim of an idempotency key, or the completion of the
// claim Token holds with Result.
type LedgerInput struct {
	Key      string
	Complete bool
	Token    string
	Result   string
}

// LedgerOutput is a claim's answer (State "claimed" with its Token,
// "in_progress", or "completed" with the Result) or a completion's outcome.
type LedgerOutput struct {
	Outcome Outcome // Unknown, or OK for a claim that was answered
	State   string
	Token   string
	Result  string
}

// LedgerState is a key's record: free (never claimed), claimed by Token, or
// completed by Token with Result. A claim whose answer was lost holds the
// key with a token nobody knows ("?"), so nobody can complete it.
type LedgerState struct {
	State  string // "", "claimed", "completed"
	Token  string
	Result string
}

// LedgerModel is an idempotency key: exactly one claim wins it, only the
// winner's token completes it, and a completed result never changes (the
// same completion sent again is accepted, another refused). Leases are
// longer than the test, so they never run out here.
var LedgerModel = porcupine.Model{
	Partition: partition(func(in any) string { return in.(LedgerInput).Key }),
	Init:      func() any { return LedgerState{} },
	Step: func(state, input, output any) (bool, any) {
		st, in, out := state.(LedgerState), input.(LedgerInput), output.(LedgerOutput)
		if !in.Complete {
			if out.Outcome == Unknown {
				if st.State == "" {
					return true, LedgerState{State: "claimed", Token: "?"}
				}
				return true, st
			}
			switch out.State {
			case "claimed":
				return st.State == "", LedgerState{State: "claimed", Token: out.Token}
			case "in_progress":
				return st.State == "claimed", st
			case "completed":
				return st.State == "completed" && st.Result == out.Result, st
			}
			return false, st
		}
		settles := st.State == "claimed" && st.Token == in.Token
		repeats := st.State == "completed" && st.Token == in.Token && st.Result == in.Result
		next := st
		if settles {
			next = LedgerState{State: "completed", Token: in.Token, Result: in.Result}
		}
		switch out.Outcome {
		case OK:
			return settles || repeats, next
		case Refused:
			return st.State != "" && !settles && !repeats, st
		case NotFound:
			return st.State == "", st
		case Unknown:
			return true, next
		}
		return false, st
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(LedgerInput), output.(LedgerOutput)
		if in.Complete {
			return fmt.Sprintf("%s: complete %s with %q -> %s", in.Key, short(in.Token), in.Result, out.Outcome)
		}
		if out.Outcome == Unknown {
			return fmt.Sprintf("%s: claim -> unknown", in.Key)
		}
		return fmt.Sprintf("%s: claim -> %s %s%q", in.Key, out.State, short(out.Token), out.Result)
	},
	DescribeState: func(state any) string {
		st := state.(LedgerState)
		return fmt.Sprintf("%s %s %q", cmpOr(st.State, "free"), short(st.Token), st.Result)
	},
}

// ItemInput is a Store operation on one item: a get, a put of Value, or a
// delete (a put of null).
type ItemInput struct {
	Key    string // namespace and key
	Op     string // "get", "put", "delete"
	Value  int    // put: the value, unique in the run
	Detail string // put: the padding's size, for the visualisation
}

// ItemOutput is a get's value (0: absent) or a write's outcome.
type ItemOutput struct {
	Value   int
	Outcome Outcome
}

// ItemModel is a Store item as a register that a delete empties (0).
var ItemModel = porcupine.Model{
	Partition: partition(func(in any) string { return in.(ItemInput).Key }),
	Init:      func() any { return 0 },
	Step: func(state, input, output any) (bool, any) {
		v, in, out := state.(int), input.(ItemInput), output.(ItemOutput)
		switch in.Op {
		case "get":
			return out.Value == v, v
		case "put":
			return out.Outcome == OK || out.Outcome == Unknown, in.Value
		case "delete":
			return out.Outcome == OK || out.Outcome == Unknown, 0
		}
		return false, v
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(ItemInput), output.(ItemOutput)
		switch in.Op {
		case "get":
			return fmt.Sprintf("%s: get -> %d", in.Key, out.Value)
		case "put":
			return fmt.Sprintf("%s: put %d%s -> %s", in.Key, in.Value, in.Detail, out.Outcome)
		}
		return fmt.Sprintf("%s: delete -> %s", in.Key, out.Outcome)
	},
	DescribeState: func(state any) string { return fmt.Sprintf("%d", state) },
}

// partition splits a history by the key of each operation: each key is a
// register of its own, checked alone.
func partition(keyOf func(input any) string) func([]porcupine.Operation) [][]porcupine.Operation {
	return func(history []porcupine.Operation) [][]porcupine.Operation {
		index := map[string]int{}
		var parts [][]porcupine.Operation
		for _, op := range history {
			k := keyOf(op.Input)
			i, ok := index[k]
			if !ok {
				i = len(parts)
				index[k] = i
				parts = append(parts, nil)
			}
			parts[i] = append(parts[i], op)
		}
		return parts
	}
}

func short(token string) string {
	if len(token) > 8 {
		return token[:8]
	}
	return token
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
