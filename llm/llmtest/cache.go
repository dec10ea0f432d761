package llmtest

import (
	"crypto/sha256"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/drydockhq/drydock/llm"
)

// The prompt caches the server plays, so that the usage it reports splits a
// prompt as the provider would and a client's cache hit ratio can be
// measured rather than guessed:
//
//   - Anthropic caches only at cache_control breakpoints. A request reads
//     the longest prefix that an earlier request wrote, looked up at each of
//     its breakpoints and at the block boundaries up to 20 blocks before
//     one; it writes the prefix up to each of its breakpoints.
//     cache_read_input_tokens is the prefix read, cache_creation_input_tokens
//     the rest up to the last breakpoint, input_tokens what follows it.
//   - OpenAI caches every prompt on its own: a request reads the longest
//     prefix it shares with an earlier one, in steps of 128 tokens;
//     prompt_tokens_details.cached_tokens is that part of prompt_tokens.
//
// Both need a prefix of at least 1024 tokens (Claude Sonnet and Opus,
// GPT-4o and later) and keep an entry 5 minutes after its last use, or an
// hour for an Anthropic breakpoint with "ttl": "1h". A prefix is the
// model, then the blocks in the provider's order (tools, system, messages)
// compared exactly, cache_control marks aside; its size is a quarter of its
// bytes in the body, like the server's default token counts.
const (
	cacheMinTokens = 1024
	cacheTTL       = 5 * time.Minute
	cacheLookback  = 20
	openAIStep     = 128
)

// promptCache is a server's prompt cache; the zero value is empty.
type promptCache struct {
	mu      sync.Mutex
	entries map[[32]byte]time.Time // prefix → expiry
	swept   int                    // size of entries after the last sweep
}

// cacheBlock is one block of a prompt: its canonical form (for the prefix
// hash), its size in the body and its breakpoint, if any.
type cacheBlock struct {
	canon []byte
	bytes int
	mark  bool
	ttl   time.Duration
}

// usage splits u.InputTokens, the whole prompt's count, into the tokens
// read from the cache, written to it and neither, and updates the cache.
// A body it cannot read leaves u as it is (decode has recorded why).
func (c *promptCache) usage(api string, req *Request, u llm.Usage, now time.Time) llm.Usage {
	var blocks []cacheBlock
	var ok bool
	switch api {
	case "anthropic":
		blocks, ok = anthropicBlocks(req.Body)
	case "openai":
		blocks, ok = openaiBlocks(req.Body)
	case "openai-responses":
		blocks, ok = responsesBlocks(req.Body)
	}
	if !ok || len(blocks) == 0 {
		return u
	}
	hashes := make([][32]byte, len(blocks)+1)
	sizes := make([]int64, len(blocks)+1)
	hashes[0] = sha256.Sum256([]byte(api + "\x00" + req.Model))
	for i, b := range blocks {
		h := sha256.New()
		h.Write(hashes[i][:])
		h.Write(b.canon)
		h.Sum(hashes[i+1][:0])
		sizes[i+1] = sizes[i] + int64(b.bytes/4)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[[32]byte]time.Time{}
	}
	c.sweep(now)
	live := func(q int) bool {
		exp, ok := c.entries[hashes[q]]
		return ok && now.Before(exp) && sizes[q] >= cacheMinTokens
	}
	keep := func(q int, ttl time.Duration) {
		if sizes[q] >= cacheMinTokens && now.Add(ttl).After(c.entries[hashes[q]]) {
			c.entries[hashes[q]] = now.Add(ttl)
		}
	}

	var read, write int64
	if strings.HasPrefix(api, "openai") {
		for q := len(blocks); q > 0; q-- {
			if live(q) {
				read = sizes[q] / openAIStep * openAIStep
				break
			}
		}
		for q := 1; q <= len(blocks); q++ {
			keep(q, cacheTTL)
		}
	} else {
		hit, last := 0, 0
		for p := 1; p <= len(blocks); p++ {
			if !blocks[p-1].mark {
				continue
			}
			last = p
			for q := p; q > max(p-cacheLookback, 0); q-- {
				if live(q) {
					hit = max(hit, q)
					break
				}
			}
		}
		if last == 0 {
			return u // no breakpoint: Anthropic caches nothing
		}
		read = sizes[hit]
		if sizes[last] >= cacheMinTokens {
			write = sizes[last] - sizes[hit]
		}
		if hit > 0 {
			keep(hit, cacheTTL)
		}
		for p := 1; p <= len(blocks); p++ {
			if b := blocks[p-1]; b.mark {
				keep(p, b.ttl)
			}
		}
	}
	// The blocks are parts of the body, so their sizes never exceed the
	// whole prompt's count; the bound guards against a caller's own count.
	read = min(read, u.InputTokens)
	write = min(write, u.InputTokens-read)
	u.InputTokens -= read + write
	u.CacheReadTokens, u.CacheWriteTokens = read, write
	return u
}

// sweep drops expired entries once the map has doubled since the last
// sweep, so that a long run's cache stays the size of its live prefixes.
func (c *promptCache) sweep(now time.Time) {
	if len(c.entries) < max(2*c.swept, 1024) {
		return
	}
	for k, exp := range c.entries {
		if !now.Before(exp) {
			delete(c.entries, k)
		}
	}
	c.swept = len(c.entries)
}

// anthropicBlocks lists a Messages request's blocks: each tool, each
// system block, each content block of each message. A message's own JSON
// around its blocks counts with its first block, so that only the
// request's top level lies outside every block.
func anthropicBlocks(body []byte) ([]cacheBlock, bool) {
	var in struct {
		Tools    []json.RawMessage `json:"tools"`
		System   json.RawMessage   `json:"system"`
		Messages []json.RawMessage `json:"messages"`
	}
	if json.Unmarshal(body, &in) != nil {
		return nil, false
	}
	var out []cacheBlock
	add := func(kind string, raw json.RawMessage, wrapper int) bool {
		first := len(out)
		var s string
		if json.Unmarshal(raw, &s) == nil {
			out = append(out, cacheBlock{canon: []byte(kind + "\x00" + string(raw)), bytes: len(raw)})
		} else {
			var parts []json.RawMessage
			if json.Unmarshal(raw, &parts) != nil || len(parts) == 0 {
				return false
			}
			for _, p := range parts {
				b, ok := canonical(kind, p)
				if !ok {
					return false
				}
				out = append(out, b)
			}
		}
		out[first].bytes += max(wrapper-len(raw), 0)
		return true
	}
	for _, t := range in.Tools {
		b, ok := canonical("tool", t)
		if !ok {
			return nil, false
		}
		out = append(out, b)
	}
	if len(in.System) > 0 && !add("system", in.System, 0) {
		return nil, false
	}
	for _, raw := range in.Messages {
		var m struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(raw, &m) != nil || !add(m.Role, m.Content, len(raw)) {
			return nil, false
		}
	}
	return out, true
}

// canonical reads one Anthropic block: its JSON with sorted keys and
// without its cache_control mark, which is not part of the prefix.
func canonical(kind string, raw json.RawMessage) (cacheBlock, bool) {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return cacheBlock{}, false
	}
	b := cacheBlock{bytes: len(raw)}
	if cc, ok := m["cache_control"].(map[string]any); ok {
		b.mark, b.ttl = true, cacheTTL
		if cc["ttl"] == "1h" {
			b.ttl = time.Hour
		}
	}
	delete(m, "cache_control")
	data, err := json.Marshal(m)
	if err != nil {
		return cacheBlock{}, false
	}
	b.canon = append([]byte(kind+"\x00"), data...)
	return b, true
}

// openaiBlocks lists a chat completions request's blocks in the order the
// model reads them: the tools, then each message.
func openaiBlocks(body []byte) ([]cacheBlock, bool) {
	var in struct {
		Tools    []json.RawMessage `json:"tools"`
		Messages []json.RawMessage `json:"messages"`
	}
	if json.Unmarshal(body, &in) != nil {
		return nil, false
	}
	var out []cacheBlock
	for _, raw := range append(in.Tools, in.Messages...) {
		b, ok := canonical("", raw)
		if !ok {
			return nil, false
		}
		out = append(out, b)
	}
	return out, true
}
