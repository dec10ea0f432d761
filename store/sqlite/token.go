package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/store/sqlstore"
)

func scanToken(row scanner) (*drydock.Token, error) {
	var (
		t                 drydock.Token
		created           string
		revoked, lastUsed sql.NullString
	)
	if err := row.Scan(&t.ID, &t.Name, &t.Admin, &t.Hash, &created, &revoked, &lastUsed); err != nil {
		return nil, err
	}
	var err error
	if t.CreatedAt, err = parseTime(created); err != nil {
		return nil, err
	}
	if t.RevokedAt, err = parseNullTime(revoked); err != nil {
		return nil, err
	}
	if t.LastUsedAt, err = parseNullTime(lastUsed); err != nil {
		return nil, err
	}
	return &t, nil
}

// CreateToken stores t. It sets CreatedAt when zero and rounds it to
// microseconds. A taken id or hash is ECONFLICT.
func (s *Store) CreateToken(ctx context.Context, t *drydock.Token) error {
	if err := sqlstore.CheckToken(t); err != nil {
		return err
	}
	created := t.CreatedAt
	if created.IsZero() {
		created = now()
	}
	created = created.UTC().Truncate(time.Microsecond)
	err := s.w.do(ctx, func(ctx context.Context, tx *wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO tokens (`+sqlstore.TokenColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			t.ID, t.Name, t.Admin, t.Hash, fmtTime(created), nullTimePtr(t.RevokedAt), nullTimePtr(t.LastUsedAt))
		if isConstraint(err) {
			return sqlstore.TokenTaken()
		}
		return err
	})
	if err != nil {
		return sqlstore.Wrap("create token "+t.ID, err)
	}
	t.CreatedAt = created
	return nil
}

// TokenByHash returns the unrevoked token with hash. It records the use in
// LastUsedAt, at most once per sqlstore.LastUsedGranularity and without waiting for
// the write.
func (s *Store) TokenByHash(ctx context.Context, hash []byte) (*drydock.Token, error) {
	t, err := scanToken(s.reads.queryRow(ctx,
		`SELECT `+sqlstore.TokenColumns+` FROM tokens WHERE hash = ? AND revoked_at IS NULL`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, sqlstore.NoSuchToken()
	}
	if err != nil {
		return nil, fmt.Errorf("token by hash: %w", err)
	}
	used := now()
	if t.LastUsedAt == nil || used.Sub(*t.LastUsedAt) >= sqlstore.LastUsedGranularity {
		id := t.ID
		s.w.try(func(ctx context.Context, tx *wtx) error {
			_, err := tx.ExecContext(ctx, `UPDATE tokens SET last_used_at = ? WHERE id = ?
				AND (last_used_at IS NULL OR last_used_at < ?)`, fmtTime(used), id, fmtTime(used))
			return err
		})
	}
	return t, nil
}

// TokenByID returns the unrevoked token with id, or ENOTFOUND.
func (s *Store) TokenByID(ctx context.Context, id string) (*drydock.Token, error) {
	t, err := scanToken(s.reads.queryRow(ctx,
		`SELECT `+sqlstore.TokenColumns+` FROM tokens WHERE id = ? AND revoked_at IS NULL`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, sqlstore.NoSuchToken()
	}
	if err != nil {
		return nil, fmt.Errorf("token by id: %w", err)
	}
	return t, nil
}

// ListTokens returns every token, revoked ones included, oldest first.
func (s *Store) ListTokens(ctx context.Context) ([]*drydock.Token, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+sqlstore.TokenColumns+` FROM tokens ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	defer rows.Close()
	tokens := make([]*drydock.Token, 0)
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, fmt.Errorf("list tokens: %w", err)
		}
		tokens = append(tokens, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	return tokens, nil
}

// RevokeToken revokes the token; revoking it again keeps the first time.
func (s *Store) RevokeToken(ctx context.Context, id string) error {
	err := s.w.do(ctx, func(ctx context.Context, tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?`,
			fmtTime(now()), id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return sqlstore.TokenNotFound(id)
		}
		return nil
	})
	return sqlstore.Wrap("revoke token "+id, err)
}

// CountTokens counts unrevoked tokens.
func (s *Store) CountTokens(ctx context.Context) (int, error) {
	var n int
	if err := s.reads.queryRow(ctx, `SELECT COUNT(*) FROM tokens WHERE revoked_at IS NULL`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count tokens: %w", err)
	}
	return n, nil
}
