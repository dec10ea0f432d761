package tokens

import (
	"math"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer"
)

// Counter counts the tokens of a text for one family of models.
type Counter interface {
	// Count returns the number of tokens of s.
	Count(s string) int
	// Name names the encoding, e.g. "o200k_base" or "estimate".
	Name() string
}

// For returns the counter for a model of a provider ("openai",
// "anthropic"). Claude models get the estimate whatever server they are
// reached through; other models, OpenAI's and the unknown ones of
// OpenAI-compatible servers, get a byte-pair encoding (o200k_base unless the
// model is known to use cl100k_base), which a Meter then calibrates.
func For(provider, model string) Counter {
	name := strings.ToLower(model)
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if provider == "anthropic" || strings.HasPrefix(name, "claude") {
		return Estimate{}
	}
	if usesCl100k(name) {
		return bpeCounter(tokenizer.Cl100kBase)
	}
	return bpeCounter(tokenizer.O200kBase)
}

// usesCl100k reports the OpenAI models older than GPT-4o.
func usesCl100k(model string) bool {
	for _, p := range []string{"gpt-4-", "gpt-3.5", "gpt-35", "text-embedding-"} {
		if strings.HasPrefix(model, p) {
			return true
		}
	}
	return model == "gpt-4"
}

// The codecs load their vocabularies (a few hundred milliseconds) once per
// process, on first use.
var (
	codecMu sync.Mutex
	codecs  = map[tokenizer.Encoding]*bpe{}
)

func bpeCounter(enc tokenizer.Encoding) *bpe {
	codecMu.Lock()
	defer codecMu.Unlock()
	if c, ok := codecs[enc]; ok {
		return c
	}
	codec, err := tokenizer.Get(enc)
	if err != nil {
		panic("tokens: " + string(enc) + " is not embedded: " + err.Error())
	}
	// Outputs of tools may hold invalid UTF-8; it is counted as U+FFFD, as
	// tiktoken does, rather than failing.
	codec.SetErrorMode(tokenizer.ErrorModeReplace)
	c := &bpe{codec: codec}
	codecs[enc] = c
	return c
}

// bpe counts with a byte-pair encoding.
type bpe struct{ codec tokenizer.Codec }

func (b *bpe) Name() string { return b.codec.GetName() }

func (b *bpe) Count(s string) int {
	if s == "" {
		return 0
	}
	n, err := b.codec.Count(s)
	if err != nil {
		return Estimate{}.Count(s)
	}
	return n
}

// Estimate counts 3.5 bytes of ASCII per token and one token per other
// character: more than Claude's tokenizer gives for English and code, and
// about what it gives for other scripts.
type Estimate struct{}

func (Estimate) Name() string { return "estimate" }

func (Estimate) Count(s string) int {
	ascii, other := 0, 0
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			ascii++
			i++
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		other++
	}
	return int(math.Ceil(float64(ascii)/3.5)) + other
}
