package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// Parsing a statement costs more than running it for the small lookups and
// inserts the store does most, so fixed queries are prepared once per
// connection and kept. Only queries built from constant text may go through
// here: a query built from input would grow the cache without bound.
type stmtCache struct {
	db preparer
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// preparer is a *sql.DB (statements prepared on each pooled connection as
// needed) or a *sql.Conn (on that connection).
type preparer interface {
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func newStmtCache(db preparer) *stmtCache {
	return &stmtCache{db: db, m: map[string]*sql.Stmt{}}
}

func (c *stmtCache) get(ctx context.Context, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[query]; ok {
		return st, nil
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.m[query] = st
	return st, nil
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, st := range c.m {
		st.Close()
		delete(c.m, q)
	}
}

// queryRow runs a cached query on the pool.
func (c *stmtCache) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := c.get(ctx, query)
	if err != nil {
		// The same call unprepared returns the error in the Row.
		return c.db.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// wtx is the writer's connection inside the batch transaction; it runs
// fixed queries as prepared statements.
type wtx struct {
	stmts *stmtCache
}

func (t *wtx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := t.stmts.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (t *wtx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return t.stmts.queryRow(ctx, query, args...)
}
