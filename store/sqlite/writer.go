package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/drydockhq/drydock"
)

// SQLite admits one writer at a time and every commit in synchronous=FULL
// mode costs an fsync. Rather than let goroutines queue on the file lock,
// every write goes to one goroutine that runs all the writes waiting at that
// moment in a single transaction and commits once (group commit): while one
// fsync runs, the next batch gathers, so throughput grows with concurrency
// instead of being capped at one fsync per write.

// maxBatch bounds one transaction, so that a flood of writes still commits
// (and answers its callers) in slices of bounded latency.
const maxBatch = 256

var errClosed = drydock.Errorf(drydock.EUNAVAILABLE, "store is closed")

// writeFunc runs inside the batch transaction. ctx is the writer's own
// context, not the caller's: interrupting a statement would roll back the
// whole batch, including other callers' writes.
type writeFunc func(ctx context.Context, tx *wtx) error

type writeOp struct {
	ctx  context.Context // the caller's, checked before the op runs
	fn   writeFunc
	done chan error // buffered; nil when nobody waits
}

type writer struct {
	conn   *sql.Conn // the database's only write connection
	tx     *wtx
	logger *slog.Logger
	ops    chan *writeOp
	quit   chan struct{}
	done   chan struct{}
	once   sync.Once

	nBatches, nOps atomic.Int64 // committed or not; for tests and tuning
}

// startWriter takes conn for the writer goroutine, which closes it (and
// its statements) when it stops.
func startWriter(conn *sql.Conn, logger *slog.Logger) *writer {
	w := &writer{
		conn:   conn,
		tx:     &wtx{stmts: newStmtCache(conn)},
		logger: logger,
		ops:    make(chan *writeOp, 4*maxBatch),
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	go w.loop()
	return w
}

// do runs fn in the next batch and returns once that batch has committed (nil)
// or fn's own error. Once queued, an op always gets a definite answer: it
// either commits or does not, so a nil return means the write is durable and
// an error means it did not happen.
func (w *writer) do(ctx context.Context, fn writeFunc) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-w.quit:
		return errClosed
	default:
	}
	op := &writeOp{ctx: ctx, fn: fn, done: make(chan error, 1)}
	select {
	case w.ops <- op:
	case <-w.done:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-op.done:
		return diskFull(err)
	case <-w.done:
		// The writer answers before it exits, so an answer may be waiting.
		select {
		case err := <-op.done:
			return diskFull(err)
		default:
			return errClosed
		}
	}
}

// try queues fn without waiting for it, and drops it when the queue is full
// or the writer is stopping. For writes that may be lost (bookkeeping).
func (w *writer) try(fn writeFunc) {
	select {
	case <-w.quit:
		return
	default:
	}
	select {
	case w.ops <- &writeOp{ctx: context.Background(), fn: fn}:
	default:
		w.logger.Debug("sqlite write queue full; dropped a best-effort write")
	}
}

// stop makes the writer commit what is queued and exit, and waits for it.
func (w *writer) stop() {
	w.once.Do(func() { close(w.quit) })
	<-w.done
}

func (w *writer) loop() {
	defer close(w.done)
	defer func() {
		w.tx.stmts.close()
		if err := w.conn.Close(); err != nil {
			w.logger.Warn("sqlite close write connection", "err", err)
		}
	}()
	batch := make([]*writeOp, 0, maxBatch)
	for {
		select {
		case op := <-w.ops:
			batch = w.fill(append(batch[:0], op))
			w.run(batch)
		case <-w.quit:
			for {
				batch = w.fill(batch[:0])
				if len(batch) == 0 {
					return
				}
				w.run(batch)
			}
		}
	}
}

// fill adds the ops already waiting, without blocking.
func (w *writer) fill(batch []*writeOp) []*writeOp {
	for len(batch) < maxBatch {
		select {
		case op := <-w.ops:
			batch = append(batch, op)
		default:
			return batch
		}
	}
	return batch
}

func (w *writer) run(batch []*writeOp) {
	w.nBatches.Add(1)
	w.nOps.Add(int64(len(batch)))
	ctx := context.Background()
	errs := make([]error, len(batch))
	defer func() {
		for i, op := range batch {
			if op.done != nil {
				op.done <- errs[i]
			} else if errs[i] != nil {
				w.logger.Warn("sqlite best-effort write failed", "err", errs[i])
			}
			batch[i] = nil
		}
	}()
	fail := func(step string, err error) {
		w.logger.Error("sqlite write batch failed", "step", step, "err", err, "ops", len(batch))
		// Harmless when SQLite already rolled back on its own.
		if _, rerr := w.tx.ExecContext(ctx, "ROLLBACK"); rerr != nil {
			w.logger.Debug("sqlite rollback after failure", "err", rerr)
		}
		err = fmt.Errorf("write %s: %w", step, err)
		for i := range errs {
			errs[i] = err
		}
	}

	// The connection is ours alone, so the transaction is plain statements
	// (which lets prepared statements outlive it). IMMEDIATE takes the write
	// lock up front: no other process can make the commit fail as busy.
	if _, err := w.tx.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		fail("begin", err)
		return
	}
	// Each op runs under a savepoint, so that one op's failure undoes only
	// that op. A lone op needs none: its failure rolls back the transaction.
	single := len(batch) == 1
	ok := 0
	for i, op := range batch {
		if err := op.ctx.Err(); err != nil {
			errs[i] = err
			continue
		}
		if single {
			if errs[i] = op.fn(ctx, w.tx); errs[i] == nil {
				ok++
			}
			break
		}
		if _, err := w.tx.ExecContext(ctx, "SAVEPOINT op"); err != nil {
			fail("savepoint", err)
			return
		}
		errs[i] = op.fn(ctx, w.tx)
		if errs[i] != nil {
			// If SQLite rolled back the whole transaction on a severe error
			// (disk full, I/O), the savepoint is gone and this fails too;
			// then nothing in the batch may be reported as written.
			if _, err := w.tx.ExecContext(ctx, "ROLLBACK TO op"); err != nil {
				fail("rollback to savepoint", errors.Join(errs[i], err))
				return
			}
		} else {
			ok++
		}
		if _, err := w.tx.ExecContext(ctx, "RELEASE op"); err != nil {
			fail("release savepoint", err)
			return
		}
	}
	if ok == 0 {
		if _, err := w.tx.ExecContext(ctx, "ROLLBACK"); err != nil {
			fail("rollback", err)
		}
		return
	}
	if _, err := w.tx.ExecContext(ctx, "COMMIT"); err != nil {
		fail("commit", err)
	}
}
