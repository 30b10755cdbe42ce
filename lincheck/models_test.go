package lincheck

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// op is an operation from call to ret (Infinity: outcome unknown).
func op(client int, in, out any, call, ret int64) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret}
}

// TestModels checks each model on small histories whose verdict is known:
// the violations the load tests look for are found, and what the service
// may do with an operation of unknown outcome is allowed.
func TestModels(t *testing.T) {
	const inf = Infinity
	put := func(expect, id string) HeadInput { return HeadInput{Thread: "t", Expect: expect, ID: id} }
	read := HeadInput{Thread: "t", Read: true}
	head := func(h string) HeadOutput { return HeadOutput{Head: h} }
	ok, refused, unknown := HeadOutput{Outcome: OK}, HeadOutput{Outcome: Refused}, HeadOutput{Outcome: Unknown}
	claim := LedgerInput{Key: "k"}
	won := func(tok string) LedgerOutput { return LedgerOutput{Outcome: OK, State: "claimed", Token: tok} }
	held := LedgerOutput{Outcome: OK, State: "in_progress"}
	done := func(r string) LedgerOutput { return LedgerOutput{Outcome: OK, State: "completed", Result: r} }
	complete := func(tok, r string) LedgerInput { return LedgerInput{Key: "k", Complete: true, Token: tok, Result: r} }
	outcome := func(o Outcome) LedgerOutput { return LedgerOutput{Outcome: o} }
	iget := ItemInput{Key: "i", Op: "get"}
	iput := func(v int) ItemInput { return ItemInput{Key: "i", Op: "put", Value: v} }
	idel := ItemInput{Key: "i", Op: "delete"}
	val := func(v int) ItemOutput { return ItemOutput{Value: v} }
	iok, iunknown := ItemOutput{Outcome: OK}, ItemOutput{Outcome: Unknown}

	tests := []struct {
		name    string
		model   porcupine.Model
		history []porcupine.Operation
		want    bool
	}{
		{"head/cas-in-turn", HeadModel, []porcupine.Operation{
			op(0, put("", "1"), ok, 0, 1), op(1, put("1", "2"), ok, 2, 3), op(0, put("1", "3"), refused, 4, 5), op(1, read, head("2"), 6, 7)}, true},
		{"head/two-winners-of-one-head", HeadModel, []porcupine.Operation{
			op(0, put("", "1"), ok, 0, 1), op(1, put("1", "2"), ok, 2, 5), op(2, put("1", "3"), ok, 2, 5)}, false},
		{"head/refused-although-head-matched", HeadModel, []porcupine.Operation{
			op(0, put("", "1"), refused, 0, 1)}, false},
		{"head/acknowledged-put-lost", HeadModel, []porcupine.Operation{
			op(0, put("", "1"), ok, 0, 1), op(1, read, head(""), 2, 3)}, false},
		{"head/older-id-does-not-move-the-head", HeadModel, []porcupine.Operation{
			op(0, put("", "5"), ok, 0, 1), op(1, put("5", "3"), ok, 2, 3), op(1, read, head("5"), 4, 5)}, true},
		{"head/unknown-applied", HeadModel, []porcupine.Operation{
			op(0, put("", "1"), unknown, 0, inf), op(1, read, head("1"), 2, 3)}, true},
		{"head/unknown-not-applied", HeadModel, []porcupine.Operation{
			op(0, put("", "1"), unknown, 0, inf), op(1, read, head(""), 2, 3), op(1, put("", "2"), ok, 4, 5)}, true},
		{"head/unknown-applied-then-undone", HeadModel, []porcupine.Operation{
			op(0, put("", "1"), unknown, 0, inf), op(1, read, head("1"), 2, 3), op(1, read, head(""), 4, 5)}, false},

		{"ledger/one-winner-then-completed", LedgerModel, []porcupine.Operation{
			op(0, claim, won("a"), 0, 1), op(1, claim, held, 2, 3), op(0, complete("a", "r"), outcome(OK), 4, 5),
			op(0, complete("a", "r"), outcome(OK), 6, 7), op(0, complete("a", "x"), outcome(Refused), 8, 9), op(1, claim, done("r"), 10, 11)}, true},
		{"ledger/two-winners", LedgerModel, []porcupine.Operation{
			op(0, claim, won("a"), 0, 1), op(1, claim, won("b"), 2, 3)}, false},
		{"ledger/result-changed", LedgerModel, []porcupine.Operation{
			op(0, claim, won("a"), 0, 1), op(0, complete("a", "r"), outcome(OK), 2, 3), op(0, complete("a", "x"), outcome(OK), 4, 5)}, false},
		{"ledger/completed-by-another-token", LedgerModel, []porcupine.Operation{
			op(0, claim, won("a"), 0, 1), op(1, complete("b", "r"), outcome(OK), 2, 3)}, false},
		{"ledger/acknowledged-completion-lost", LedgerModel, []porcupine.Operation{
			op(0, claim, won("a"), 0, 1), op(0, complete("a", "r"), outcome(OK), 2, 3), op(1, claim, held, 4, 5)}, false},
		{"ledger/lost-claim-holds-the-key", LedgerModel, []porcupine.Operation{
			op(0, claim, LedgerOutput{}, 0, inf), op(1, claim, held, 2, 3), op(2, complete("z", "r"), outcome(Refused), 4, 5)}, true},
		{"ledger/unknown-completion-applied", LedgerModel, []porcupine.Operation{
			op(0, claim, won("a"), 0, 1), op(0, complete("a", "r"), outcome(Unknown), 2, inf), op(1, claim, done("r"), 4, 5)}, true},

		{"item/put-get-delete", ItemModel, []porcupine.Operation{
			op(0, iput(1), iok, 0, 1), op(1, iget, val(1), 2, 3), op(0, idel, iok, 4, 5), op(1, iget, val(0), 6, 7)}, true},
		{"item/stale-read", ItemModel, []porcupine.Operation{
			op(0, iput(1), iok, 0, 1), op(0, iput(2), iok, 2, 3), op(1, iget, val(1), 4, 5)}, false},
		{"item/deleted-comes-back", ItemModel, []porcupine.Operation{
			op(0, iput(1), iok, 0, 1), op(0, idel, iok, 2, 3), op(1, iget, val(1), 4, 5)}, false},
		{"item/unknown-put-either-way", ItemModel, []porcupine.Operation{
			op(0, iput(1), iunknown, 0, inf), op(1, iget, val(0), 2, 3), op(1, iget, val(1), 4, 5)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(tt.model, tt.history); got != tt.want {
				t.Errorf("linearizable = %v, want %v", got, tt.want)
			}
		})
	}
}
