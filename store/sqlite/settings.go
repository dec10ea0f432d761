package sqlite

import (
	"context"
	"fmt"
)

// settingSecretsKey names the row holding the secrets key's check value.
const settingSecretsKey = "secrets_key_check"

// BindSecretsKey implements drydock.Store. The single writer serializes
// concurrent binds, so the first one's value is what all of them read.
func (s *Store) BindSecretsKey(ctx context.Context, check []byte, replace bool) ([]byte, error) {
	var bound []byte
	err := s.w.do(ctx, func(ctx context.Context, tx *wtx) error {
		q := `INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`
		if replace {
			q = `INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value`
		}
		if _, err := tx.ExecContext(ctx, q, settingSecretsKey, check); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT value FROM settings WHERE name = ?`, settingSecretsKey).Scan(&bound)
	})
	if err != nil {
		return nil, fmt.Errorf("bind secrets key: %w", err)
	}
	return bound, nil
}
