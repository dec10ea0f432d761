package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/drydockhq/drydock"
)

var _ drydock.Store = (*Store)(nil)

//go:embed migrations/*.sql
var migrationFS embed.FS

// defaultMaxConns is the pool size when the dsn sets none. pgx's default,
// max(4, CPUs), is sized for CPU-bound work; here every write waits for a
// WAL flush, and concurrent commits share flushes only if that many
// connections can wait at once. 16 doubled CreateJob throughput over 4 on two
// cores with 256 concurrent callers, and 64 gave no more (BENCHMARKS.md).
func defaultMaxConns() int32 { return int32(max(16, 2*runtime.GOMAXPROCS(0))) }

// migrationLockID is the advisory lock replicas take around migrations, so
// that several starting at once apply each migration once. It is goose's
// own default id (crc32 of "goose").
const migrationLockID int64 = 4097083626

// Store is a drydock.Store on a PostgreSQL database, shared by every
// replica that opens the same database.
type Store struct {
	pool   *pgxpool.Pool
	logger *slog.Logger

	// bg tracks the LastUsedAt writes TokenByHash starts, so that Close
	// waits for them instead of closing the pool under them.
	mu     sync.Mutex
	closed bool
	bg     sync.WaitGroup
	bgSem  chan struct{}

	closeOnce sync.Once
}

// Open connects to the database dsn names (a postgres:// URL or key=value
// string, as pgx reads them, pool_* parameters included), applies the
// embedded migrations, and returns the store. logger may be nil.
//
// Without pool_max_conns in the dsn the pool holds up to max(16,
// 2×GOMAXPROCS) connections (see defaultMaxConns). Several replicas share
// the server's max_connections (100 by default): set pool_max_conns when
// they would exceed it.
func Open(ctx context.Context, dsn string, logger *slog.Logger) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open postgres store: invalid dsn: %s", parseError(err))
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = defaultMaxConns()
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	where := fmt.Sprintf("%s:%d/%s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres store %s: %w", where, err)
	}
	if err := migrate(ctx, pool, logger); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres store %s: %w", where, err)
	}
	logger.Info("postgres store open", "database", where, "max_conns", cfg.MaxConns)
	return &Store{pool: pool, logger: logger, bgSem: make(chan struct{}, 4)}, nil
}

// parseError is what went wrong parsing a dsn without the dsn: pgx quotes
// it in the message and masks the password only on a best-effort basis.
func parseError(err error) string {
	var pe *pgconn.ParseConfigError
	if !errors.As(err, &pe) {
		return err.Error()
	}
	// "cannot parse `<dsn>`: <what> (<cause>)"
	msg := pe.Error()
	if i := strings.LastIndex(msg, "`: "); i >= 0 {
		return msg[i+3:]
	}
	if cause := errors.Unwrap(pe); cause != nil {
		return cause.Error()
	}
	return "cannot parse it"
}

// migrate applies the embedded migrations under an advisory lock held on a
// connection of its own.
func migrate(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) error {
	fsys, err := fs.Sub(migrationFS, "migrations")
	if err != nil {
		return err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrationLockID); err != nil {
		return fmt.Errorf("migrate: take lock: %w", err)
	}
	defer func() {
		// A failed unlock leaves the lock to the session: closing the
		// connection drops it.
		if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationLockID); err != nil {
			conn.Conn().Close(context.Background())
		}
	}()

	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, r := range results {
		logger.Info("postgres migration applied", "version", r.Source.Version, "file", r.Source.Path, "duration", r.Duration)
	}
	return nil
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("ping postgres store: %w", err)
	}
	return nil
}

// Close waits for the queries in flight (a write that returns nil is
// committed), then closes every connection. It is safe to call more than
// once; calls after it fail.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.bg.Wait()
		s.pool.Close()
		s.logger.Info("postgres store closed")
	})
	return nil
}

// background runs f on its own goroutine unless the store is closing or
// enough such writes are already running: they are best effort.
func (s *Store) background(f func(ctx context.Context) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	select {
	case s.bgSem <- struct{}{}:
	default:
		return
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer func() { <-s.bgSem }()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := f(ctx); err != nil {
			s.logger.Warn("postgres background write", "err", err)
		}
	}()
}

// Postgres error codes the store turns into drydock errors.
const (
	codeUniqueViolation     = "23505"
	codeCharNotInRepertoire = "22021" // NUL byte or invalid UTF-8 in text
	codeUntranslatableChar  = "22P05" // \u0000 in jsonb
)

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func isUnique(err error) bool { return pgCode(err) == codeUniqueViolation }

// isBadText reports whether Postgres refused a string SQLite would have
// stored: text columns hold neither NUL bytes nor invalid UTF-8.
func isBadText(err error) bool {
	c := pgCode(err)
	return c == codeCharNotInRepertoire || c == codeUntranslatableChar
}

// utc converts a time read from the database (pgx gives time.Local) to UTC,
// as the SQLite store returns them.
func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// dbTime is a time the caller chose, at the precision Postgres keeps, or nil
// (SQL NULL) for the zero time so that the query uses the database clock.
func dbTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC().Truncate(time.Microsecond)
	return &u
}

// micros is a duration as an interval parameter in microseconds, the
// precision of timestamptz.
func micros(d time.Duration) int64 { return d.Microseconds() }

// inTx runs f in a transaction and commits it when f returns nil.
func (s *Store) inTx(ctx context.Context, f func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, f)
}
