package saver

import "context"

// A Budget counts the bytes a request's answer holds in memory: what a
// store reads for it and what the API encodes of it. The API gives each
// request one (WithBudget), shared by all requests, so that many large
// answers at once wait for each other instead of taking the memory of the
// process. Stores charge it (Take) as they read values, before they decode
// them, so the bytes are counted while they are taken.
type Budget interface {
	// Take counts n more bytes, held until the request is answered. It
	// waits while other requests hold the budget; EUNAVAILABLE if the
	// bytes do not come free in time, ETOOLARGE if the request alone
	// would hold more than the whole budget.
	Take(ctx context.Context, n int64) error
}

type budgetKey struct{}

// WithBudget returns ctx carrying b, which Take charges.
func WithBudget(ctx context.Context, b Budget) context.Context {
	return context.WithValue(ctx, budgetKey{}, b)
}

// BudgetOf returns the budget ctx carries, or nil.
func BudgetOf(ctx context.Context) Budget {
	b, _ := ctx.Value(budgetKey{}).(Budget)
	return b
}

// Take charges n bytes to the budget ctx carries; nil without one.
func Take(ctx context.Context, n int64) error {
	if b, ok := ctx.Value(budgetKey{}).(Budget); ok && n > 0 {
		return b.Take(ctx, n)
	}
	return nil
}

// Size is the bytes a value holds: its type and data.
func (t *Typed) Size() int64 { return int64(len(t.Type) + len(t.Data)) }

// Size is the bytes a write holds: its strings and value.
func (w *Write) Size() int64 {
	return int64(len(w.TaskID)+len(w.TaskPath)+len(w.Channel)) + w.Value.Size()
}
