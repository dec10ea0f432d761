package secretbox

import (
	"regexp"
	"strings"
)

// Redacted replaces a credential-shaped string. Unlike a known value,
// masked byte for byte with Mask, a shape's length says nothing worth
// keeping.
const Redacted = "[REDACTED]"

// CredentialShapes matches well-known credential formats wherever they
// appear, whether or not the job declared them as secrets: text a sandbox
// prints may hold a key it found (a config file, an environment variable
// the caller set), which must not travel on to a log or a model. The agent's
// tool output (package agent) and a held sandbox's command output (package
// api) are masked with this one list.
var CredentialShapes = regexp.MustCompile(strings.Join([]string{
	`sk-[A-Za-z0-9_\-]{16,}`,         // OpenAI, Anthropic (sk-ant-...), many compatible APIs
	`ddk_[A-Za-z0-9_\-]{16,}`,        // drydock API tokens
	`AKIA[0-9A-Z]{16}`,               // AWS access key ids
	`gh[pousr]_[A-Za-z0-9]{30,}`,     // GitHub tokens
	`github_pat_[A-Za-z0-9_]{30,}`,   // GitHub fine-grained tokens
	`xox[abposr]-[A-Za-z0-9\-]{10,}`, // Slack tokens
	`AIza[0-9A-Za-z_\-]{35}`,         // Google API keys
	`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`,
}, "|"))

// MaskCredentials returns s with every credential-shaped string replaced
// by Redacted.
func MaskCredentials(s string) string {
	return CredentialShapes.ReplaceAllString(s, Redacted)
}
