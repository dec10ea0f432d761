package llmtest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock/llm"
)

// anUsage posts a Messages request and returns the usage of the answer.
func anUsage(t *testing.T, srv *Server, body map[string]any) (input, read, write int64, size int) {
	t.Helper()
	var out struct {
		Usage struct {
			Input int64 `json:"input_tokens"`
			Read  int64 `json:"cache_read_input_tokens"`
			Write int64 `json:"cache_creation_input_tokens"`
		} `json:"usage"`
	}
	data := postJSON(t, srv.URL()+"/v1/messages", body, &out)
	u := out.Usage
	// The three parts are the whole prompt, counted as without a cache.
	if total := int64(len(data)/4 + 1); u.Input+u.Read+u.Write != total {
		t.Errorf("input %d + read %d + write %d != %d, the prompt's size", u.Input, u.Read, u.Write, total)
	}
	return u.Input, u.Read, u.Write, len(data)
}

// postJSON posts body and decodes a 200 answer into out; it returns the
// body sent.
func postJSON(t *testing.T, url string, body, out any) []byte {
	t.Helper()
	data, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, out) != nil {
		t.Fatalf("status %d: %s", resp.StatusCode, raw)
	}
	return data
}

func text(s string, mark bool) map[string]any {
	b := map[string]any{"type": "text", "text": s}
	if mark {
		b["cache_control"] = map[string]any{"type": "ephemeral"}
	}
	return b
}

func user(blocks ...map[string]any) map[string]any {
	return map[string]any{"role": "user", "content": blocks}
}

func messages(system string, msgs ...map[string]any) map[string]any {
	return map[string]any{
		"model": "claude-sonnet-4-5", "max_tokens": 100,
		"system":   []any{text(system, true)},
		"tools":    []any{map[string]any{"name": "bash", "description": "Runs a command.", "input_schema": map[string]any{"type": "object"}}},
		"messages": msgs,
	}
}

// Anthropic's cache as the server plays it: a request writes what lies
// before its last breakpoint, the next reads the longest prefix written
// before, found at one of its breakpoints; any change before a breakpoint
// misses, and so does a prefix under 1024 tokens.
func TestAnthropicCacheReadsThePrefixWrittenBefore(t *testing.T) {
	t.Parallel()
	srv := NewServer(t, Options{Func: func(*Request) Turn { return Turn{Text: "ok"} }})
	system := strings.Repeat("You are a careful agent. ", 240) // ~6000 bytes, ~1500 tokens
	task := user(text("Do the task.", true))

	in, read, write, size := anUsage(t, srv, messages(system, task))
	if read != 0 || write < 1500 || in > 50 {
		t.Errorf("first request (%d bytes): input %d, read %d, write %d; want everything written", size, in, read, write)
	}
	first := write

	// The conversation goes on; the marks move to the last two user
	// messages, the older of which is where the first request wrote.
	reply := map[string]any{"role": "assistant", "content": []any{text("Working on it, and here is a long reasoning "+strings.Repeat("step ", 200), false)}}
	in, read, write, _ = anUsage(t, srv, messages(system, user(text("Do the task.", true)), reply, user(text("Go on.", true))))
	if read != first || write < 200 || in > 50 {
		t.Errorf("second request: input %d, read %d, write %d; want %d read and the reply written", in, read, write, first)
	}

	// The same prompt again reads all of it.
	in, read, write, _ = anUsage(t, srv, messages(system, user(text("Do the task.", true)), reply, user(text("Go on.", true))))
	if write != 0 || read < first+200 || in > 50 {
		t.Errorf("repeated request: input %d, read %d, write %d; want all read", in, read, write)
	}

	// A different system prompt shares no prefix at a breakpoint.
	_, read, write, _ = anUsage(t, srv, messages(system+" Be brief.", task))
	if read != 0 || write < 1500 {
		t.Errorf("changed system prompt: read %d, write %d; want a miss", read, write)
	}

	// Too short to be cached, and no breakpoint: nothing read or written.
	short := messages("Be brief.", task)
	for _, body := range []map[string]any{short, short} {
		if in, read, write, _ := anUsage(t, srv, body); read != 0 || write != 0 || in == 0 {
			t.Errorf("short prompt: input %d, read %d, write %d; want no cache", in, read, write)
		}
	}
	unmarked := messages(system, user(text("Do the task.", false)))
	unmarked["system"] = system
	for range 2 {
		if _, read, write, _ := anUsage(t, srv, unmarked); read != 0 || write != 0 {
			t.Errorf("no breakpoint: read %d, write %d; want no cache", read, write)
		}
	}
}

// An entry lives five minutes after its last use (an hour with "ttl":
// "1h"), and a breakpoint finds an entry up to 20 blocks before it only.
func TestAnthropicCacheExpiresAndLooksBack20Blocks(t *testing.T) {
	t.Parallel()
	system := strings.Repeat("You are a careful agent. ", 240)
	body := func(msgs ...map[string]any) *Request {
		data, _ := json.Marshal(messages(system, msgs...))
		return &Request{Model: "claude-sonnet-4-5", Body: data}
	}
	whole := func(r *Request) llm.Usage { return llm.Usage{InputTokens: int64(len(r.Body)/4 + 1)} }
	var c promptCache
	now := time.Now()
	r := body(user(text("Do the task.", true)))
	c.usage("anthropic", r, whole(r), now)
	if u := c.usage("anthropic", r, whole(r), now.Add(4*time.Minute)); u.CacheReadTokens == 0 {
		t.Errorf("read after 4 minutes: %+v", u)
	}
	// The read refreshed the entry: 8 minutes after the write, 4 after the read.
	if u := c.usage("anthropic", r, whole(r), now.Add(8*time.Minute)); u.CacheReadTokens == 0 {
		t.Errorf("read 4 minutes after the last use: %+v", u)
	}
	if u := c.usage("anthropic", r, whole(r), now.Add(20*time.Minute)); u.CacheReadTokens != 0 || u.CacheWriteTokens == 0 {
		t.Errorf("read 12 minutes after the last use: %+v", u)
	}

	// 25 blocks after the written prefix, with the breakpoint on the last.
	var blocks []map[string]any
	for i := range 25 {
		blocks = append(blocks, text(strings.Repeat("x", i+1), i == 24))
	}
	far := body(user(text("Do the task.", false)), map[string]any{"role": "assistant", "content": []any{text("ok", false)}}, user(blocks...))
	later := now.Add(30 * time.Minute)
	c.usage("anthropic", r, whole(r), later) // write the task's prefix again
	task := c.usage("anthropic", r, whole(r), later).CacheReadTokens
	// Only the tools and system prompt are read, at the system's breakpoint.
	if u := c.usage("anthropic", far, whole(far), later); u.CacheReadTokens == 0 || u.CacheReadTokens >= task {
		t.Errorf("read %d tokens; want the system prompt's prefix, less than the task's %d 27 blocks before the breakpoint", u.CacheReadTokens, task)
	}
	hour := body(user(map[string]any{"type": "text", "text": "Once an hour.", "cache_control": map[string]any{"type": "ephemeral", "ttl": "1h"}}))
	c.usage("anthropic", hour, whole(hour), later)
	if u := c.usage("anthropic", hour, whole(hour), later.Add(50*time.Minute)); u.CacheReadTokens == 0 {
		t.Errorf("a 1h entry was gone after 50 minutes: %+v", u)
	}
}

// OpenAI caches on its own: a request that starts like an earlier one
// reads the shared prefix in steps of 128 tokens, as part of prompt_tokens.
func TestOpenAICacheReadsASharedPrefix(t *testing.T) {
	t.Parallel()
	srv := NewServer(t, Options{Func: func(*Request) Turn { return Turn{Text: "ok"} }})
	system := map[string]any{"role": "system", "content": strings.Repeat("You are a careful agent. ", 240)}
	usage := func(msgs ...map[string]any) (prompt, cached int64) {
		var out struct {
			Usage struct {
				Prompt  int64 `json:"prompt_tokens"`
				Details struct {
					Cached int64 `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		data := postJSON(t, srv.OpenAIBaseURL()+"/chat/completions", map[string]any{"model": "gpt-4.1", "messages": msgs}, &out)
		if out.Usage.Prompt != int64(len(data)/4+1) {
			t.Errorf("prompt_tokens %d for %d bytes", out.Usage.Prompt, len(data))
		}
		return out.Usage.Prompt, out.Usage.Details.Cached
	}
	task := map[string]any{"role": "user", "content": "Do the task."}
	if _, cached := usage(system, task); cached != 0 {
		t.Errorf("first request: %d cached", cached)
	}
	prompt, cached := usage(system, task, map[string]any{"role": "assistant", "content": "Done."}, map[string]any{"role": "user", "content": "Check it."})
	if cached < 1024 || cached%128 != 0 || cached >= prompt {
		t.Errorf("second request: %d of %d cached; want the shared prefix in steps of 128", cached, prompt)
	}
	if _, cached := usage(map[string]any{"role": "system", "content": "Other."}, task); cached != 0 {
		t.Errorf("another system prompt: %d cached", cached)
	}
}
