package drydock

import "time"

// Token is an API token. The secret itself is shown once at creation and never
// stored: Hash is its SHA-256.
type Token struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Admin      bool       `json:"admin"`
	CreatedAt  time.Time  `json:"created_at"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
	Hash       []byte     `json:"-"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
}
