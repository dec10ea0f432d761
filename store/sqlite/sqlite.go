package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/pressly/goose/v3"
	sqlite3 "modernc.org/sqlite"
	sqlite3lib "modernc.org/sqlite/lib"

	"github.com/drydockhq/drydock"
)

var _ drydock.Store = (*Store)(nil)

//go:embed migrations/*.sql
var migrationFS embed.FS

// busyTimeout bounds how long a connection waits for a lock held by another
// process (the sqlite3 shell, a backup). Inside this process the single writer
// never contends with itself and WAL readers never block it.
const busyTimeout = 10 * time.Second

// Store is a drydock.Store on one SQLite database file.
type Store struct {
	path   string
	logger *slog.Logger
	wdb    *sql.DB // one connection, used only by the writer goroutine
	rdb    *sql.DB // read-only pool
	reads  *stmtCache
	w      *writer

	closeOnce sync.Once
	closeErr  error
}

// Open opens (creating if needed) the database at path, applies the embedded
// migrations, and starts the writer. logger may be nil.
func Open(ctx context.Context, path string, logger *slog.Logger) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if path == "" || strings.ContainsAny(path, "?#") || strings.HasPrefix(path, "file:") || path == ":memory:" {
		// The driver reads everything after '?' as parameters; an in-memory
		// database would not be shared between the writer and the readers.
		return nil, fmt.Errorf("open sqlite store: %q is not a plain file path", path)
	}

	// The file holds token hashes and every task and transcript: readable by
	// its owner only. SQLite gives the -wal and -shm files the same mode.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open sqlite store: %w", err)
	}
	f.Close()

	// synchronous=FULL: in WAL mode NORMAL survives a process crash but may
	// lose the last commits on power loss; a job acknowledged with 201 must
	// survive both, and group commit amortises the extra fsync.
	wdb, err := sql.Open("sqlite", dsn(path, url.Values{
		"_pragma": {
			"journal_mode(WAL)",
			"synchronous(FULL)",
			"foreign_keys(1)",
			fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()),
		},
		"_txlock": {"immediate"},
	}))
	if err != nil {
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	wdb.SetConnMaxIdleTime(0)
	if err := wdb.PingContext(ctx); err != nil {
		wdb.Close()
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	if err := migrate(ctx, wdb, logger); err != nil {
		wdb.Close()
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}

	rdb, err := sql.Open("sqlite", dsn(path, url.Values{
		"_pragma": {
			"query_only(1)",
			"foreign_keys(1)",
			fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()),
		},
	}))
	if err != nil {
		wdb.Close()
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	readers := max(4, 2*runtime.GOMAXPROCS(0))
	rdb.SetMaxOpenConns(readers)
	rdb.SetMaxIdleConns(readers)
	rdb.SetConnMaxIdleTime(0)
	if err := rdb.PingContext(ctx); err != nil {
		wdb.Close()
		rdb.Close()
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}

	conn, err := wdb.Conn(ctx)
	if err != nil {
		wdb.Close()
		rdb.Close()
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	s := &Store{path: path, logger: logger, wdb: wdb, rdb: rdb, reads: newStmtCache(rdb)}
	s.w = startWriter(conn, logger)
	logger.Info("sqlite store open", "path", path, "readers", readers)
	return s, nil
}

func dsn(path string, params url.Values) string {
	return path + "?" + params.Encode()
}

func migrate(ctx context.Context, db *sql.DB, logger *slog.Logger) error {
	fsys, err := fs.Sub(migrationFS, "migrations")
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, fsys, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, r := range results {
		logger.Info("sqlite migration applied", "version", r.Source.Version, "file", r.Source.Path, "duration", r.Duration)
	}
	return nil
}

// Path is the database file the store was opened on.
func (s *Store) Path() string { return s.path }

// Ping checks that both the readers and the writer answer.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.rdb.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("ping sqlite store: %w", err)
	}
	select {
	case <-s.w.done:
		return errClosed
	default:
	}
	return nil
}

// Close stops accepting writes, commits the ones already queued, and closes
// the database. It is safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.w.stop()
		s.reads.close()
		// A checkpoint on the last connection folds the WAL back into the
		// main file, so the database is one file again at rest.
		if _, err := s.wdb.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			s.logger.Warn("sqlite checkpoint on close", "err", err)
		}
		s.closeErr = errors.Join(s.rdb.Close(), s.wdb.Close())
		s.logger.Info("sqlite store closed", "path", s.path)
	})
	return s.closeErr
}

// Times are stored as fixed-width UTC text with microseconds, so that string
// order is time order and values match Postgres's precision.
const timeLayout = "2006-01-02T15:04:05.000000Z"

func fmtTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// nullTime stores the zero time as NULL.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return fmtTime(t)
}

func nullTimePtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return nullTime(*t)
}

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored time %q: %w", s, err)
	}
	return t, nil
}

func parseNullTime(s sql.NullString) (*time.Time, error) {
	if !s.Valid {
		return nil, nil
	}
	t, err := parseTime(s.String)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// now is the store's clock, at the precision it stores.
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// diskFull gives a write that failed because the disk is full a message
// that says so, and the code of a failure that passes once space is freed
// (without it the API would answer "internal error" and nobody would know
// why every schedule fails).
func diskFull(err error) error {
	var e *sqlite3.Error
	if errors.As(err, &e) && e.Code()&0xff == sqlite3lib.SQLITE_FULL {
		return fmt.Errorf("%w: %w", drydock.Errorf(drydock.EUNAVAILABLE, "the disk holding the database is full, so nothing was written; free space in the data directory and try again"), err)
	}
	return err
}

// isConstraint reports whether err is a UNIQUE or PRIMARY KEY violation.
func isConstraint(err error) bool {
	var e *sqlite3.Error
	return errors.As(err, &e) && e.Code()&0xff == sqlite3lib.SQLITE_CONSTRAINT
}
