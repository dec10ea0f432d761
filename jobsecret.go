package drydock

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Limits on a job's secrets (JobSpec.Secrets).
const (
	MaxSecrets        = 32
	MaxSecretValueLen = 4 << 10
	// MinSecretValueLen is the shortest value accepted. Values are hidden
	// by finding them in text; a shorter one ("yes", "1234") would also be
	// found in ordinary output, and masking it there would mangle it.
	MinSecretValueLen = 8
	MaxSecretNameLen  = 128
)

// secretNamePattern is what a shell accepts as a variable name.
var secretNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// reservedSecretNames are variables the sandbox sets itself: a secret with
// one of these names would break the sandbox (PATH, HOME) or its egress
// (the proxy variables, which programs read in either case).
var reservedSecretNames = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "PWD", "OLDPWD", "LANG", "TERM", "DISPLAY",
	"PAGER", "GIT_PAGER", "NO_COLOR", "HOSTNAME", "TMPDIR",
	"LD_PRELOAD", "LD_LIBRARY_PATH",
	"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
}

// reservedSecretPrefixes are the namespaces of the sandbox's own
// configuration (toolboxd's and the orchestrator's) and of the locale.
var reservedSecretPrefixes = []string{"TOOLBOXD_", "TOOLBOX_", "DRYDOCK_", "LC_"}

// SecretValues maps environment variable names to secret values. Printing
// it with fmt or slog shows the names only; the job's JSON never carries it
// (Job.MarshalJSON); stores keep it only sealed (Job.SealedSecrets).
type SecretValues map[string]string

// Names returns the names, sorted.
func (s SecretValues) Names() []string {
	names := make([]string, 0, len(s))
	for k := range s {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// Values returns the values, each once, longest first, so that a masker
// replaces a value before any value it contains.
func (s SecretValues) Values() []string {
	vals := make([]string, 0, len(s))
	for _, v := range s {
		if !slices.Contains(vals, v) {
			vals = append(vals, v)
		}
	}
	slices.SortFunc(vals, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	return vals
}

// String shows the names only.
func (s SecretValues) String() string {
	return fmt.Sprintf("secrets%v", s.Names())
}

// Format keeps every fmt verb (%v, %+v, %#v, %q...) to the names, so a job
// printed for debugging shows no value.
func (s SecretValues) Format(f fmt.State, _ rune) { fmt.Fprint(f, s.String()) }

// LogValue keeps slog to the names too.
func (s SecretValues) LogValue() slog.Value { return slog.AnyValue(s.Names()) }

// Validate checks names and values and returns an EINVALID or ETOOLARGE
// *Error naming the offending secret (never its value).
func (s SecretValues) Validate() error {
	if len(s) > MaxSecrets {
		return Errorf(ETOOLARGE, "secrets has %d entries; the limit is %d", len(s), MaxSecrets)
	}
	for _, name := range s.Names() {
		if err := CheckSecretName(name); err != nil {
			return err
		}
		v := s[name]
		switch {
		case len(v) > MaxSecretValueLen:
			return Errorf(ETOOLARGE, "secrets: the value of %s is %d bytes; the limit is %d", name, len(v), MaxSecretValueLen)
		case !utf8.ValidString(v) || strings.ContainsRune(v, 0):
			return Errorf(EINVALID, "secrets: the value of %s must be valid UTF-8 text without NUL bytes", name)
		case len(v) < MinSecretValueLen:
			return Errorf(EINVALID, "secrets: the value of %s is too short to be masked reliably (%d bytes; at least %d)", name, len(v), MinSecretValueLen)
		case strings.TrimSpace(v) != v:
			// The masker looks for the value as given; leading or trailing
			// space is rarely meant and would be printed without it.
			return Errorf(EINVALID, "secrets: the value of %s starts or ends with white space", name)
		}
	}
	return nil
}

// CheckSecretName refuses a name that is not a shell variable name or that
// the sandbox reserves for itself; toolboxd checks the names it is given
// with it too.
func CheckSecretName(name string) error {
	if len(name) > MaxSecretNameLen || !secretNamePattern.MatchString(name) {
		shown := name
		if len(shown) > 40 || !utf8.ValidString(shown) {
			shown = strings.ToValidUTF8(shown[:min(len(shown), 40)], "?") + "..."
		}
		return Errorf(EINVALID, "secrets: %q is not a valid name: use letters, digits and _, not starting with a digit, at most %d characters", shown, MaxSecretNameLen)
	}
	upper := strings.ToUpper(name)
	if slices.Contains(reservedSecretNames, upper) {
		return Errorf(EINVALID, "secrets: %s is reserved by the sandbox; choose another name", name)
	}
	for _, p := range reservedSecretPrefixes {
		if strings.HasPrefix(upper, p) {
			return Errorf(EINVALID, "secrets: %s is reserved by the sandbox (names starting with %s are); choose another name", name, p)
		}
	}
	return nil
}

// MarshalJSON encodes the job with its secrets' names but never their
// values: JobSpec.Secrets is write-only. The runner holds a job with its
// secrets unsealed, so encoding must drop them whoever encodes it. (A
// struct that embedded Job would take this method and lose its own fields:
// give Job a field name instead.)
func (j Job) MarshalJSON() ([]byte, error) {
	type plain Job // no methods: no recursion
	return json.Marshal(struct {
		plain
		// A field at depth 0 hides the embedded JobSpec.Secrets.
		Secrets *struct{} `json:"secrets,omitempty"`
	}{plain: plain(j)})
}

// CheckSecretsSealed is the check a Store makes before it keeps a job: the
// values only sealed (Secrets itself is never stored), with their names.
func (j *Job) CheckSecretsSealed() error {
	if len(j.Secrets) > 0 && len(j.SealedSecrets) == 0 {
		return Errorf(EINTERNAL, "job %s: secrets must be sealed before the job is stored", j.ID)
	}
	if len(j.SealedSecrets) > 0 && len(j.SecretNames) == 0 {
		return Errorf(EINTERNAL, "job %s: sealed secrets without their names", j.ID)
	}
	return nil
}
