package sqlstore

import (
	"time"

	"github.com/drydockhq/drydock"
)

// TokenColumns is the column list of the tokens table, in the order both
// stores scan it.
const TokenColumns = `id, name, admin, hash, created_at, revoked_at, last_used_at`

// LastUsedGranularity is how stale a token's LastUsedAt may get: a token
// used on every request would otherwise turn every read into a write.
const LastUsedGranularity = time.Minute

// SecretsKeySetting names the settings row holding the check value of the
// key that seals jobs' secrets (Store.BindSecretsKey).
const SecretsKeySetting = "secrets_key_check"

// CheckToken checks a token before it is stored.
func CheckToken(t *drydock.Token) error {
	if t.ID == "" {
		return drydock.Errorf(drydock.EINVALID, "token id is required")
	}
	if len(t.Hash) == 0 {
		return drydock.Errorf(drydock.EINVALID, "token hash is required")
	}
	return nil
}

// TokenTaken is the error of a token whose id or hash is already stored.
func TokenTaken() error {
	return drydock.Errorf(drydock.ECONFLICT, "a token with this id or secret already exists")
}

// NoSuchToken is the error of a lookup that finds no unrevoked token. It
// names nothing: the caller may be probing for tokens.
func NoSuchToken() error {
	return drydock.Errorf(drydock.ENOTFOUND, "no such token")
}

// TokenNotFound is the error of a revocation of a token id never stored.
func TokenNotFound(id string) error {
	return drydock.Errorf(drydock.ENOTFOUND, "token %s not found", id)
}
