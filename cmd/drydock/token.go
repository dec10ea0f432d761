package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/drydockhq/drydock"
)

// TokenCmd manages API tokens directly in the server's store, so the first
// admin token can be made before any token exists to call the API with.
type TokenCmd struct {
	DataDir string `default:"${data_dir}" env:"DRYDOCK_DATA_DIR" help:"The server's data directory."`
	Store   string `env:"DRYDOCK_STORE" help:"The server's postgres:// URL, if it uses Postgres." placeholder:"URL"`

	Create TokenCreateCmd `cmd:"" help:"Create a token and print it once."`
	List   TokenListCmd   `cmd:"" help:"List tokens (never their secrets)."`
	Revoke TokenRevokeCmd `cmd:"" help:"Revoke a token by id."`
}

func (c *TokenCmd) open(ctx context.Context) (drydock.Store, error) {
	st, err := openStore(ctx, c.Store, c.DataDir, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, fmt.Errorf("%w (set --data-dir or --store to the server's)", err)
	}
	return st, nil
}

// TokenCreateCmd creates a token.
type TokenCreateCmd struct {
	Name  string `help:"A name to recognize the token by." default:"default"`
	Admin bool   `help:"The token sees every user's jobs."`
	JSON  bool   `help:"Print JSON."`
}

func (c *TokenCreateCmd) Run(g *Globals, parent *TokenCmd) error {
	ctx := context.Background()
	st, err := parent.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	secret, hash := drydock.NewTokenSecret()
	var b [8]byte
	_, _ = rand.Read(b[:])
	t := &drydock.Token{ID: "tok_" + hex.EncodeToString(b[:]), Name: c.Name, Admin: c.Admin, CreatedAt: time.Now().UTC(), Hash: hash}
	before, err := st.CountTokens(ctx)
	if err != nil {
		return fmt.Errorf("count tokens: %w", err)
	}
	if err := st.CreateToken(ctx, t); err != nil {
		return fmt.Errorf("create token: %w", err)
	}
	if before == 0 {
		fmt.Fprintln(g.Err, "Development mode is now off: this was the first token, so a server on this store refuses requests without a token from now on (no restart needed).")
	}
	if c.JSON {
		return json.NewEncoder(g.Out).Encode(map[string]any{"id": t.ID, "name": t.Name, "admin": t.Admin, "token": secret})
	}
	fmt.Fprintf(g.Err, "Created token %s (%s, admin=%v). It is shown only now; keep it safe:\n", safe(t.ID), safe(t.Name), t.Admin)
	fmt.Fprintln(g.Out, secret)
	return nil
}

// TokenListCmd lists tokens.
type TokenListCmd struct {
	JSON bool `help:"Print JSON."`
}

func (c *TokenListCmd) Run(g *Globals, parent *TokenCmd) error {
	ctx := context.Background()
	st, err := parent.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	ts, err := st.ListTokens(ctx)
	if err != nil {
		return err
	}
	if c.JSON {
		return json.NewEncoder(g.Out).Encode(ts)
	}
	tw := tabwriter.NewWriter(g.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tADMIN\tCREATED\tREVOKED")
	for _, t := range ts {
		revoked := "-"
		if t.RevokedAt != nil {
			revoked = t.RevokedAt.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\n", safe(t.ID), safe(t.Name), t.Admin, t.CreatedAt.Format(time.RFC3339), revoked)
	}
	return tw.Flush()
}

// TokenRevokeCmd revokes a token.
type TokenRevokeCmd struct {
	ID string `arg:"" help:"Token id (tok_...)."`
}

func (c *TokenRevokeCmd) Run(g *Globals, parent *TokenCmd) error {
	ctx := context.Background()
	st, err := parent.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.RevokeToken(ctx, c.ID); err != nil {
		return fmt.Errorf("revoke %s: %w", c.ID, err)
	}
	fmt.Fprintf(g.Out, "revoked %s\n", c.ID)
	left, err := st.CountTokens(ctx)
	if err != nil {
		return fmt.Errorf("count tokens: %w", err)
	}
	if left == 0 {
		fmt.Fprintf(g.Err, "No token remains. A server on this store that listens on loopback now accepts requests without a token as the local admin (development mode), at once; on any other address it refuses every request, and does not start again. Create a token with 'drydock token create --admin' to close it.\n")
	}
	return nil
}
