package saver

// RunSet holds the run ids a DeleteForRuns call names, for the store to
// look up each checkpoint's run_id in as it finds the tenant's checkpoints.
type RunSet map[string]bool

// NewRunSet returns the set of runIDs.
func NewRunSet(runIDs []string) RunSet {
	s := make(RunSet, len(runIDs))
	for _, r := range runIDs {
		s[r] = true
	}
	return s
}
