package sqlite

import "context"

// WriterStats reports how many write batches ran and how many ops they held.
func (s *Store) WriterStats() (batches, ops int64) {
	return s.w.nBatches.Load(), s.w.nOps.Load()
}

// WriterPragma reads a pragma on the write connection, inside a write batch.
func (s *Store) WriterPragma(ctx context.Context, name string) (string, error) {
	var v string
	err := s.w.do(ctx, func(ctx context.Context, tx *wtx) error {
		return tx.QueryRowContext(ctx, "PRAGMA "+name).Scan(&v)
	})
	return v, err
}

// ReaderPragma reads a pragma on a read connection.
func (s *Store) ReaderPragma(ctx context.Context, name string) (string, error) {
	var v string
	err := s.rdb.QueryRowContext(ctx, "PRAGMA "+name).Scan(&v)
	return v, err
}
