package bolt

// SetScanHook makes DeleteForRuns call hook inside the transaction in which
// it looks for the runs' checkpoints, once it has read the first.
func (s *Store) SetScanHook(hook func()) { s.scanHook = hook }

// SetBuryHook makes DeleteThread and DeleteForRuns call hook after each
// transaction that deletes and tombstones checkpoints.
func (s *Store) SetBuryHook(hook func()) { s.buryHook = hook }

// keyCount counts the keys of a bucket.
func keyCount(b kvBucket) int {
	n := 0
	c := b.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		n++
	}
	return n
}

// Flush writes a Pebble store's memtable to a table.
func (s *Store) Flush() error { return s.db.(*pebbleEngine).db.Flush() }
