package postgres

import (
	"context"

	"github.com/drydockhq/drydock/store/sqlstore"
)

// BindSecretsKey implements drydock.Store. Without replace, the conflict
// clause rewrites the row with its own value so that RETURNING yields what
// is recorded; a concurrent first insert makes this one wait for its commit
// and return the winner's value.
func (s *Store) BindSecretsKey(ctx context.Context, check []byte, replace bool) ([]byte, error) {
	set := "settings.value"
	if replace {
		set = "excluded.value"
	}
	var bound []byte
	err := s.pool.QueryRow(ctx, `INSERT INTO settings (name, value) VALUES ($1, $2)
		ON CONFLICT (name) DO UPDATE SET value = `+set+` RETURNING value`, sqlstore.SecretsKeySetting, check).Scan(&bound)
	if err != nil {
		return nil, sqlstore.Wrap("bind secrets key", err)
	}
	return bound, nil
}
