package sqlite

// WriterStats reports how many write batches ran and how many ops they held.
func (s *Store) WriterStats() (batches, ops int64) {
	return s.w.nBatches.Load(), s.w.nOps.Load()
}
