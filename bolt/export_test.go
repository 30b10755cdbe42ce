package bolt

// SetScanHook makes DeleteForRuns call hook inside the transaction in which
// it looks for the runs' checkpoints, once it has read the first.
func (s *Store) SetScanHook(hook func()) { s.scanHook = hook }
