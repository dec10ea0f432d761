package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/store/sqlstore"
)

func scanToken(row pgx.Row) (*drydock.Token, error) {
	var t drydock.Token
	var revoked, lastUsed *time.Time
	if err := row.Scan(&t.ID, &t.Name, &t.Admin, &t.Hash, &t.CreatedAt, &revoked, &lastUsed); err != nil {
		return nil, err
	}
	t.CreatedAt = t.CreatedAt.UTC()
	t.RevokedAt = utc(revoked)
	t.LastUsedAt = utc(lastUsed)
	return &t, nil
}

// CreateToken stores t. It sets CreatedAt when zero (from the database
// clock) and rounds it to microseconds. A taken id or hash is ECONFLICT.
func (s *Store) CreateToken(ctx context.Context, t *drydock.Token) error {
	if err := sqlstore.CheckToken(t); err != nil {
		return err
	}
	var revoked, lastUsed *time.Time
	if t.RevokedAt != nil {
		revoked = dbTime(*t.RevokedAt)
	}
	if t.LastUsedAt != nil {
		lastUsed = dbTime(*t.LastUsedAt)
	}
	var created time.Time
	err := s.pool.QueryRow(ctx, `INSERT INTO tokens (`+sqlstore.TokenColumns+`)
		VALUES ($1, $2, $3, $4, COALESCE($5, now()), $6, $7) RETURNING created_at`,
		t.ID, t.Name, t.Admin, t.Hash, dbTime(t.CreatedAt), revoked, lastUsed).Scan(&created)
	switch {
	case isUnique(err):
		return sqlstore.TokenTaken()
	case isBadText(err):
		return drydock.Errorf(drydock.EINVALID, "token id and name must be valid UTF-8 without NUL characters")
	case err != nil:
		return sqlstore.Wrap("create token "+t.ID, err)
	}
	t.CreatedAt = created.UTC()
	return nil
}

// TokenByHash returns the unrevoked token with hash. It records the use in
// LastUsedAt, at most once per sqlstore.LastUsedGranularity and without waiting for
// the write.
func (s *Store) TokenByHash(ctx context.Context, hash []byte) (*drydock.Token, error) {
	t, err := scanToken(s.pool.QueryRow(ctx,
		`SELECT `+sqlstore.TokenColumns+` FROM tokens WHERE hash = $1 AND revoked_at IS NULL`, hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, sqlstore.NoSuchToken()
	}
	if err != nil {
		return nil, sqlstore.Wrap("token by hash", err)
	}
	if t.LastUsedAt == nil || time.Since(*t.LastUsedAt) >= sqlstore.LastUsedGranularity {
		id := t.ID
		// The condition, on the database clock, keeps replicas that saw the
		// same stale value from all writing it.
		s.background(func(ctx context.Context) error {
			_, err := s.pool.Exec(ctx, `UPDATE tokens SET last_used_at = now() WHERE id = $1
				AND (last_used_at IS NULL OR last_used_at <= now() - $2::bigint * interval '1 microsecond')`,
				id, micros(sqlstore.LastUsedGranularity))
			return err
		})
	}
	return t, nil
}

// TokenByID returns the unrevoked token with id, or ENOTFOUND.
func (s *Store) TokenByID(ctx context.Context, id string) (*drydock.Token, error) {
	if badKey(id) {
		return nil, sqlstore.NoSuchToken()
	}
	t, err := scanToken(s.pool.QueryRow(ctx,
		`SELECT `+sqlstore.TokenColumns+` FROM tokens WHERE id = $1 AND revoked_at IS NULL`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, sqlstore.NoSuchToken()
	}
	if err != nil {
		return nil, sqlstore.Wrap("token by id", err)
	}
	return t, nil
}

// ListTokens returns every token, revoked ones included, oldest first.
func (s *Store) ListTokens(ctx context.Context) ([]*drydock.Token, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+sqlstore.TokenColumns+` FROM tokens ORDER BY created_at, id`)
	if err != nil {
		return nil, sqlstore.Wrap("list tokens", err)
	}
	defer rows.Close()
	tokens := make([]*drydock.Token, 0)
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, sqlstore.Wrap("list tokens", err)
		}
		tokens = append(tokens, t)
	}
	if err := rows.Err(); err != nil {
		return nil, sqlstore.Wrap("list tokens", err)
	}
	return tokens, nil
}

// RevokeToken revokes the token; revoking it again keeps the first time.
func (s *Store) RevokeToken(ctx context.Context, id string) error {
	notFound := sqlstore.TokenNotFound(id)
	if badKey(id) {
		return notFound
	}
	tag, err := s.pool.Exec(ctx, `UPDATE tokens SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1`, id)
	if err == nil && tag.RowsAffected() == 0 {
		err = notFound
	}
	return sqlstore.Wrap("revoke token "+id, err)
}

// CountTokens counts unrevoked tokens.
func (s *Store) CountTokens(ctx context.Context) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT COUNT(*) FROM tokens WHERE revoked_at IS NULL`).Scan(&n); err != nil {
		return 0, sqlstore.Wrap("count tokens", err)
	}
	return n, nil
}
