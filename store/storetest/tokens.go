package storetest

import (
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drydockhq/drydock"
)

func (s *suite) tokenTests() map[string]func(t *testing.T) {
	return map[string]func(t *testing.T){
		"Lifecycle": s.testTokenLifecycle,
		"Conflicts": s.testTokenConflicts,
		"LastUsed":  s.testTokenLastUsed,
		"ByID":      s.testTokenByID,
	}
}

func hashOf(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

func (s *suite) testTokenLifecycle(t *testing.T) {
	st := s.newStore(t)
	if n, err := st.CountTokens(t.Context()); err != nil || n != 0 {
		t.Fatalf("CountTokens of an empty store = %d, %v", n, err)
	}
	if toks, err := st.ListTokens(t.Context()); err != nil || len(toks) != 0 {
		t.Fatalf("ListTokens of an empty store = %v, %v", toks, err)
	}
	base := ts(time.Now().Add(-time.Hour))
	admin := &drydock.Token{ID: "tok-admin", Name: "root", Admin: true, CreatedAt: base, Hash: hashOf("s1")}
	user := &drydock.Token{ID: "tok-user", Name: "ci", CreatedAt: base.Add(time.Second), Hash: hashOf("s2")}
	for _, tok := range []*drydock.Token{user, admin} {
		if err := st.CreateToken(t.Context(), tok); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := st.CountTokens(t.Context()); err != nil || n != 2 {
		t.Fatalf("CountTokens = %d, %v; want 2", n, err)
	}
	for _, want := range []*drydock.Token{admin, user} {
		got, err := st.TokenByHash(t.Context(), want.Hash)
		if err != nil {
			t.Fatalf("TokenByHash(%s): %v", want.ID, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("TokenByHash(%s) (-want +got):\n%s", want.ID, diff)
		}
	}
	_, err := st.TokenByHash(t.Context(), hashOf("wrong"))
	wantCode(t, "TokenByHash of an unknown secret", err, drydock.ENOTFOUND)

	before := time.Now()
	if err := st.RevokeToken(t.Context(), user.ID); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	_, err = st.TokenByHash(t.Context(), user.Hash)
	wantCode(t, "TokenByHash of a revoked token", err, drydock.ENOTFOUND)
	if n, err := st.CountTokens(t.Context()); err != nil || n != 1 {
		t.Fatalf("CountTokens after a revoke = %d, %v; want 1", n, err)
	}

	list, err := st.ListTokens(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != admin.ID || list[1].ID != user.ID {
		t.Fatalf("ListTokens = %v; want admin then user (creation order), revoked included", list)
	}
	if list[0].RevokedAt != nil || list[1].RevokedAt == nil {
		t.Fatalf("RevokedAt: admin %v, user %v", list[0].RevokedAt, list[1].RevokedAt)
	}
	revokedAt := *list[1].RevokedAt
	within(t, "RevokedAt", revokedAt, before, after)

	// Revoking twice keeps the first time; unknown ids are not found.
	if err := st.RevokeToken(t.Context(), user.ID); err != nil {
		t.Fatalf("second RevokeToken: %v", err)
	}
	list, err = st.ListTokens(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !list[1].RevokedAt.Equal(revokedAt) {
		t.Fatalf("second revoke moved RevokedAt from %s to %s", revokedAt, list[1].RevokedAt)
	}
	wantCode(t, "RevokeToken of an unknown id", st.RevokeToken(t.Context(), "tok-nope"), drydock.ENOTFOUND)
}

func (s *suite) testTokenConflicts(t *testing.T) {
	st := s.newStore(t)
	tok := &drydock.Token{ID: "tok-1", Name: "a", CreatedAt: ts(time.Now()), Hash: hashOf("s1")}
	if err := st.CreateToken(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		tok  *drydock.Token
		code string
	}{
		{"same hash", &drydock.Token{ID: "tok-2", Name: "b", Hash: hashOf("s1")}, drydock.ECONFLICT},
		{"same id", &drydock.Token{ID: "tok-1", Name: "b", Hash: hashOf("s2")}, drydock.ECONFLICT},
		{"no id", &drydock.Token{Name: "b", Hash: hashOf("s3")}, drydock.EINVALID},
		{"no hash", &drydock.Token{ID: "tok-3", Name: "b"}, drydock.EINVALID},
	}
	for _, tt := range tests {
		wantCode(t, "CreateToken with "+tt.name, st.CreateToken(t.Context(), tt.tok), tt.code)
	}
	if n, err := st.CountTokens(t.Context()); err != nil || n != 1 {
		t.Fatalf("CountTokens = %d, %v; want 1", n, err)
	}
	// A token created without CreatedAt gets one.
	fresh := &drydock.Token{ID: "tok-4", Name: "c", Hash: hashOf("s4")}
	before := time.Now()
	if err := st.CreateToken(t.Context(), fresh); err != nil {
		t.Fatal(err)
	}
	within(t, "CreatedAt set by the store", fresh.CreatedAt, before, time.Now())
}

// testTokenLastUsed checks that a lookup records the use. The write may
// happen after TokenByHash returns, so the test polls.
func (s *suite) testTokenLastUsed(t *testing.T) {
	st := s.newStore(t)
	tok := &drydock.Token{ID: "tok-1", Name: "a", CreatedAt: ts(time.Now()), Hash: hashOf("s1")}
	if err := st.CreateToken(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	if _, err := st.TokenByHash(t.Context(), tok.Hash); err != nil {
		t.Fatal(err)
	}
	var used *time.Time
	eventually(t, "LastUsedAt to be recorded", func() bool {
		list, err := st.ListTokens(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		used = list[0].LastUsedAt
		return used != nil
	})
	within(t, "LastUsedAt", *used, before, time.Now())
}

// testTokenByID checks the question the server asks of every open stream,
// live view and signed link: is the token that opened it still valid?
func (s *suite) testTokenByID(t *testing.T) {
	st := s.newStore(t)
	tok := &drydock.Token{ID: "tok-1", Name: "a", Admin: true, CreatedAt: ts(time.Now()), Hash: hashOf("s1")}
	other := &drydock.Token{ID: "tok-2", Name: "b", CreatedAt: ts(time.Now()), Hash: hashOf("s2")}
	for _, tk := range []*drydock.Token{tok, other} {
		if err := st.CreateToken(t.Context(), tk); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.TokenByID(t.Context(), tok.ID)
	if err != nil {
		t.Fatalf("TokenByID of a valid token: %v", err)
	}
	if diff := cmp.Diff(tok, got); diff != "" {
		t.Fatalf("TokenByID (-want +got):\n%s", diff)
	}
	for _, id := range []string{"tok-nope", "", "tok-1\x00", "\xff"} {
		_, err := st.TokenByID(t.Context(), id)
		wantCode(t, fmt.Sprintf("TokenByID(%q)", id), err, drydock.ENOTFOUND)
	}
	if err := st.RevokeToken(t.Context(), tok.ID); err != nil {
		t.Fatal(err)
	}
	_, err = st.TokenByID(t.Context(), tok.ID)
	wantCode(t, "TokenByID of a revoked token", err, drydock.ENOTFOUND)
	if _, err := st.TokenByID(t.Context(), other.ID); err != nil {
		t.Fatalf("TokenByID of the token that was not revoked: %v", err)
	}
	// A lookup by id is not a use of the token.
	list, err := st.ListTokens(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range list {
		if tk.LastUsedAt != nil {
			t.Errorf("TokenByID recorded a use of %s at %s", tk.ID, tk.LastUsedAt)
		}
	}
}
