package runner

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

// TrustEnv are the variables through which the usual tools find a CA
// bundle: OpenSSL and what links it (Python's ssl, Go's crypto/x509),
// curl, requests, pip, git, and node (which adds the file to its own
// store).
var TrustEnv = []string{"SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "PIP_CERT", "GIT_SSL_CAINFO", "NODE_EXTRA_CA_CERTS"}

// installCAScript writes the image's system bundle followed by the PEM on
// its standard input into the home directory (the root file system is
// read-only), replacing the file at once so that a process never reads
// half of it, and prints the file's path. Where the image has NSS's
// certutil (the desktop profile, for Chromium, which reads its trust
// anchors from the user's NSS database and ignores the variables), each
// certificate of the PEM is also added to $HOME/.pki/nssdb as a trusted
// CA for servers (only in an isolated sandbox: the local runtime's HOME is
// the server user's, whose NSS database is not Drydock's to change). It
// runs as the sandbox's user, so whatever it follows is the sandbox's own.
const installCAScript = `set -eu
umask 022
dir="${HOME:-/tmp}/.drydock"
mkdir -p "$dir"
tmp="$dir/.ca-certificates.crt.$$"
cas="$dir/.operator-cas.$$"
trap 'rm -rf "$tmp" "$cas" "$cas.d"' EXIT
cat >"$cas"
for f in /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt /etc/ssl/cert.pem; do
	if [ -r "$f" ]; then cat "$f"; echo; break; fi
done >"$tmp"
cat "$cas" >>"$tmp"
mv -f "$tmp" "$dir/ca-certificates.crt"
if [ "${DRYDOCK_CA_NSS:-}" = 1 ] && command -v certutil >/dev/null 2>&1; then
	db="${HOME:-/tmp}/.pki/nssdb"
	mkdir -p "$db" "$cas.d"
	[ -f "$db/cert9.db" ] || certutil -d "sql:$db" -N --empty-password >/dev/null
	awk -v d="$cas.d" '/-----BEGIN CERTIFICATE-----/ { n++; f = sprintf("%s/%04d.pem", d, n) } f { print > f } /-----END CERTIFICATE-----/ { close(f); f = "" }' "$cas"
	for f in "$cas.d"/*.pem; do
		[ -e "$f" ] || continue
		nick="drydock-sandbox-ca-$(basename "$f" .pem)"
		certutil -d "sql:$db" -D -n "$nick" >/dev/null 2>&1 || true
		certutil -d "sql:$db" -A -t "C,," -n "$nick" -i "$f" >/dev/null
	done
fi
printf '%s' "$dir/ca-certificates.crt"`

// installCAs writes the combined bundle into the sandbox when the server
// has trusted CAs (Config.TrustedCAs) and returns the variables that point
// the sandbox's processes at it, nil otherwise. It runs once the sandbox is
// ready, for a new, warm or reattached sandbox alike; a rerun writes the
// same file again.
func (r *Runner) installCAs(ctx context.Context, sb *drydock.Sandbox, log *slog.Logger) (map[string]string, error) {
	if len(r.cfg.TrustedCAs) == 0 {
		return nil, nil
	}
	nss := "1"
	if sb.Isolation == drydock.IsolationNone {
		nss = "0"
	}
	var stdout, stderr bytes.Buffer
	res, err := r.deps.Toolbox(sb).Exec(ctx, toolbox.ExecRequest{
		Args:    []string{"/bin/sh", "-c", installCAScript},
		Env:     map[string]string{"DRYDOCK_CA_NSS": nss},
		Stdin:   r.cfg.TrustedCAs,
		Timeout: drydock.Duration(time.Minute),
	}, &stdout, &stderr)
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("exit code %d: %s", res.ExitCode, strings.TrimSpace(stderr.String()))
	}
	path := stdout.String()
	if err == nil && (!strings.HasPrefix(path, "/") || strings.ContainsAny(path, "\n\x00")) {
		err = fmt.Errorf("the script printed %q, not the bundle's path", path)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, drydock.Errorf(drydock.EUNAVAILABLE, "installing the server's trusted CAs (--sandbox-ca) in the sandbox failed: %s", drydock.ErrorMessage(err))
	}
	env := make(map[string]string, len(TrustEnv))
	for _, name := range TrustEnv {
		env[name] = path
	}
	log.Info("trusted CAs installed in the sandbox", "bundle", path)
	return env, nil
}
