package llmtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock/llm"
)

// Fault is a failure the server plays instead of an answer.
type Fault int

const (
	NoFault      Fault = iota
	RateLimit          // 429 with Retry-After-Ms
	ServerError        // 500
	Overloaded         // Anthropic: 529 overloaded_error; OpenAI: 503
	Unauthorized       // 401, as for a wrong key
	Drop               // the connection is closed without an answer
	BadRequest         // 400 with Turn.Text as the API's message
	// Cut answers 200 with the whole answer's Content-Length, sends the
	// first half of the body and closes the connection: an endpoint or a
	// proxy dying mid-response.
	Cut
)

func (f Fault) String() string {
	switch f {
	case NoFault:
		return "none"
	case RateLimit:
		return "rate_limit"
	case ServerError:
		return "server_error"
	case Overloaded:
		return "overloaded"
	case Unauthorized:
		return "unauthorized"
	case Drop:
		return "drop"
	case BadRequest:
		return "bad_request"
	case Cut:
		return "cut"
	}
	return "fault(" + strconv.Itoa(int(f)) + ")"
}

// Turn is the server's answer to one request.
type Turn struct {
	// Thinking is the turn's reasoning (Anthropic, when the request turned
	// thinking on): the server signs each block (a block with Redacted
	// set goes as redacted_thinking), and refuses a later request whose
	// copy of them was altered (see anthropic_native.go).
	Thinking  []llm.Thinking
	Text      string
	ToolCalls []llm.ToolCall // an empty ID is generated ("call_N_I" or "toolu_N_I")
	// StopReason defaults to tool_use when there are calls, else end_turn.
	StopReason llm.StopReason
	// Usage defaults to an estimate from the sizes of request and answer,
	// the prompt split into cache reads, writes and the rest as the
	// provider's prompt cache would (cache.go).
	Usage llm.Usage
	// Fault, when set, is played instead of the answer.
	Fault Fault
	// Delay holds the answer back (the request ends early if the client
	// gives up); with Fault it delays the fault.
	Delay time.Duration
	// Reasoning, when set, is what the model thought first: the Responses
	// dialect plays it as a reasoning item (encrypted when the request
	// includes reasoning.encrypted_content) that must come back with the
	// turn (responses.go). Chat Completions has no such item.
	Reasoning string
}

// Call builds a tool call whose input is the JSON text input.
func Call(name, input string) llm.ToolCall {
	return llm.ToolCall{Name: name, Input: json.RawMessage(input)}
}

// Repeat returns n copies of t.
func Repeat(n int, t Turn) []Turn {
	out := make([]Turn, n)
	for i := range out {
		out[i] = t
	}
	return out
}

// Request is one request the server received, decoded.
type Request struct {
	N          int    // 1-based, in arrival order
	API        string // "openai" (chat completions), "openai-responses" or "anthropic"
	Model      string
	System     string
	Messages   []llm.Message
	Tools      []llm.Tool
	MaxTokens  int
	Credential string // the API key or token it carried
	// CacheBreakpoints counts cache_control marks (Anthropic).
	CacheBreakpoints int
	// ToolChoice is the request's tool_choice as sent (JSON), if any
	// (OpenAI).
	ToolChoice string
	// Thinking is the extended-thinking budget the request asked for, 0
	// when off; Betas its anthropic-beta flags (Anthropic).
	Thinking int
	Betas    []string
	Header   http.Header // without the credential headers
	Body     []byte
	// Problems lists how the request broke the API's rules; the server
	// answered it with 400.
	Problems []string
	// Answer is what the server played: the Turn (after defaults); zero when
	// it played a fault (a Cut answer included: the client never got it).
	Answer Turn
	// The Responses dialect's own fields (API "openai-responses"): store,
	// include, the reasoning settings, the ids of the reasoning items sent
	// back (in order) and every input item as "TYPE ID [PHASE]" (call id or
	// role for items without an id; an assistant message's phase), in
	// order.
	Store            *bool
	Include          []string
	ReasoningEffort  string
	ReasoningSummary string
	Reasoning        []string
	InputItems       []string
}

// LastUser returns the last user message, or a zero Message.
func (r *Request) LastUser() llm.Message {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == llm.RoleUser {
			return r.Messages[i]
		}
	}
	return llm.Message{}
}

// ToolNames lists the names of the offered tools.
func (r *Request) ToolNames() []string {
	var names []string
	for _, t := range r.Tools {
		names = append(names, t.Name)
	}
	return names
}

// Options configures a Server.
type Options struct {
	// Turns are played in order, one per request (faults included).
	Turns []Turn
	// Func, when set, decides every answer instead of Turns. It runs on the
	// server's goroutine for the request, after the request is recorded.
	Func func(*Request) Turn
	// APIKey, when set, is the only credential accepted; others get 401.
	APIKey string
	// RetryAfter is sent as Retry-After-Ms with 429, 5xx and 529 answers so
	// that SDK retries are quick (default 10ms; negative sends none).
	RetryAfter time.Duration
	// AllowProblems keeps NewServer from failing the test on requests that
	// broke the API's rules or found the script exhausted.
	AllowProblems bool
}

// Server is the scripted model server.
type Server struct {
	opts Options
	ln   net.Listener
	hs   *http.Server

	mu       sync.Mutex
	next     int
	requests []*Request
	problems []string
	cache    promptCache // see cache.go
	issued   issued      // reasoning items sent (responses.go)
}

// Start serves on a random port of 127.0.0.1 until Close.
func Start(opts Options) (*Server, error) {
	if opts.RetryAfter == 0 {
		opts.RetryAfter = 10 * time.Millisecond
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("llmtest listen: %w", err)
	}
	s := &Server{opts: opts, ln: ln, issued: issued{needs: map[string]needed{}}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, openaiAPI{}) })
	mux.HandleFunc("POST /v1/responses", func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, responsesAPI{s}) })
	mux.HandleFunc("POST /v1/messages", func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, anthropicAPI{}) })
	s.hs = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go s.hs.Serve(ln)
	return s, nil
}

// NewServer starts a server for a test and stops it at the test's end,
// failing the test if a request broke the API's rules or found no turn left
// (unless opts.AllowProblems).
func NewServer(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		if !opts.AllowProblems {
			for _, p := range s.Problems() {
				t.Errorf("llmtest: %s", p)
			}
		}
	})
	return s
}

// Close stops the server.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.hs.Shutdown(ctx); err != nil {
		return s.hs.Close()
	}
	return nil
}

// URL is the server's root, e.g. http://127.0.0.1:4711.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// OpenAIBaseURL is the base URL for the OpenAI SDK (OPENAI_BASE_URL).
func (s *Server) OpenAIBaseURL() string { return s.URL() + "/v1" }

// AnthropicBaseURL is the base URL for the Anthropic SDK (ANTHROPIC_BASE_URL).
func (s *Server) AnthropicBaseURL() string { return s.URL() }

// Add appends turns to the script.
func (s *Server) Add(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.Turns = append(s.opts.Turns, turns...)
}

// Requests returns the requests received so far.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

// Remaining is the number of scripted turns not played yet.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.opts.Turns) - s.next
}

// Problems lists the rule violations and script exhaustions seen so far.
func (s *Server) Problems() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.problems...)
}

// api is one wire format.
type api interface {
	name() string
	credential(h http.Header) string
	decode(body []byte, req *Request) // fills req, Problems included
	answer(req *Request, t Turn) any
	errorBody(status int, kind, msg string) any
	idPrefix() string
}

const maxBody = 64 << 20

func (s *Server) serve(w http.ResponseWriter, r *http.Request, a api) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return
	}
	req := &Request{API: a.name(), Body: body, Credential: a.credential(r.Header), Header: r.Header.Clone()}
	for _, h := range []string{"Authorization", "X-Api-Key"} {
		req.Header.Del(h)
	}
	a.decode(body, req)

	s.mu.Lock()
	req.N = len(s.requests) + 1
	s.requests = append(s.requests, req)
	for _, p := range req.Problems {
		s.problems = append(s.problems, fmt.Sprintf("request %d (%s): %s", req.N, req.API, p))
	}
	s.mu.Unlock()

	if len(req.Problems) > 0 {
		writeJSON(w, http.StatusBadRequest, a.errorBody(400, "invalid_request_error", strings.Join(req.Problems, "; ")))
		return
	}
	if s.opts.APIKey != "" && req.Credential != s.opts.APIKey {
		writeJSON(w, http.StatusUnauthorized, a.errorBody(401, "authentication_error", "Incorrect API key provided: "+mask(req.Credential)))
		return
	}

	turn, ok := s.turnFor(req)
	if !ok {
		msg := fmt.Sprintf("llmtest: the script has no turn left for request %d", req.N)
		s.mu.Lock()
		s.problems = append(s.problems, msg)
		s.mu.Unlock()
		writeJSON(w, http.StatusBadRequest, a.errorBody(400, "invalid_request_error", msg))
		return
	}
	if turn.Delay > 0 {
		select {
		case <-time.After(turn.Delay):
		case <-r.Context().Done():
			return
		}
	}
	s.play(w, r, a, req, turn)
}

func (s *Server) turnFor(req *Request) (Turn, bool) {
	if s.opts.Func != nil {
		return s.opts.Func(req), true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next >= len(s.opts.Turns) {
		return Turn{}, false
	}
	t := s.opts.Turns[s.next]
	s.next++
	return t, true
}

func (s *Server) play(w http.ResponseWriter, r *http.Request, a api, req *Request, t Turn) {
	retry := func() {
		if s.opts.RetryAfter > 0 {
			w.Header().Set("Retry-After-Ms", strconv.FormatInt(s.opts.RetryAfter.Milliseconds(), 10))
		}
	}
	switch t.Fault {
	case RateLimit:
		retry()
		writeJSON(w, http.StatusTooManyRequests, a.errorBody(429, "rate_limit_error", "Rate limit reached for requests"))
		return
	case ServerError:
		retry()
		writeJSON(w, http.StatusInternalServerError, a.errorBody(500, "api_error", "The server had an error while processing your request"))
		return
	case Overloaded:
		retry()
		status := 503
		if req.API == "anthropic" {
			status = 529
		}
		writeJSON(w, status, a.errorBody(status, "overloaded_error", "Overloaded"))
		return
	case Unauthorized:
		writeJSON(w, http.StatusUnauthorized, a.errorBody(401, "authentication_error", "Incorrect API key provided: "+mask(req.Credential)))
		return
	case BadRequest:
		writeJSON(w, http.StatusBadRequest, a.errorBody(400, "invalid_request_error", t.Text))
		return
	case Drop:
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	}
	for i := range t.ToolCalls {
		c := &t.ToolCalls[i]
		if c.ID == "" {
			c.ID = fmt.Sprintf("%s%d_%d", a.idPrefix(), req.N, i+1)
		}
		if len(c.Input) == 0 {
			c.Input = json.RawMessage("{}")
		}
	}
	if req.Thinking == 0 {
		t.Thinking = nil // a model thinks only when the request asks it to
	}
	if t.StopReason == "" {
		t.StopReason = llm.StopEndTurn
		if len(t.ToolCalls) > 0 {
			t.StopReason = llm.StopToolUse
		}
	}
	if t.Usage == (llm.Usage{}) {
		out := len(t.Text)
		for _, c := range t.ToolCalls {
			out += len(c.Name) + len(c.Input)
		}
		t.Usage = llm.Usage{InputTokens: int64(len(req.Body)/4 + 1), OutputTokens: int64(out/4 + 1)}
		if t.Reasoning != "" {
			t.Usage.ReasoningTokens = int64(len(t.Reasoning)/4 + 1)
			t.Usage.OutputTokens += t.Usage.ReasoningTokens
		}
		t.Usage = s.cache.usage(req.API, req, t.Usage, time.Now())
	}
	w.Header().Set("Request-Id", fmt.Sprintf("req_llmtest_%d", req.N))
	if t.Fault == Cut {
		// Like every fault, a cut answer is not recorded as played: the
		// client never got it.
		cut(w, a.answer(req, t))
		return
	}
	s.mu.Lock()
	req.Answer = t
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, a.answer(req, t))
}

// cut sends the headers of a complete answer and half of its body, then
// closes the connection, so the client sees a 200 whose body ends early.
func cut(w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body[:len(body)/2])
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	// Aborting the handler closes the connection without completing the
	// body (the server does not pad it or reuse the connection).
	panic(http.ErrAbortHandler)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// mask shows a credential the way the real APIs do in their 401 messages,
// which is why providers must not repeat those messages.
func mask(s string) string {
	if len(s) <= 8 {
		return "***"
	}
	return s[:5] + "***" + s[len(s)-3:]
}

var errNotObject = errors.New("must be a JSON object")

func checkObject(raw json.RawMessage) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return errNotObject
	}
	return nil
}
