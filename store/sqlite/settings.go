package sqlite

import (
	"context"
	"fmt"

	"github.com/drydockhq/drydock/store/sqlstore"
)

// BindSecretsKey implements drydock.Store. The single writer serializes
// concurrent binds, so the first one's value is what all of them read.
func (s *Store) BindSecretsKey(ctx context.Context, check []byte, replace bool) ([]byte, error) {
	var bound []byte
	err := s.w.do(ctx, func(ctx context.Context, tx *wtx) error {
		q := `INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`
		if replace {
			q = `INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value`
		}
		if _, err := tx.ExecContext(ctx, q, sqlstore.SecretsKeySetting, check); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT value FROM settings WHERE name = ?`, sqlstore.SecretsKeySetting).Scan(&bound)
	})
	if err != nil {
		return nil, fmt.Errorf("bind secrets key: %w", err)
	}
	return bound, nil
}
