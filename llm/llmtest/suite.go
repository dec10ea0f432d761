package llmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/drydockhq/drydock/llm"
	"github.com/google/go-cmp/cmp"
)

// Config is what the suite asks a factory to configure.
type Config struct {
	APIKey         string        // the credential to send
	MaxRetries     int           // retries on 429, 5xx, timeouts and dropped connections
	RequestTimeout time.Duration // per attempt
}

// Factory builds the provider under test, talking to srv with cfg.
type Factory func(t *testing.T, srv *Server, cfg Config) llm.Provider

// TestKey is the credential the suite's servers accept.
const TestKey = "sk-llmtest-0123456789abcdefghij"

// Model is the model name the suite asks for.
const Model = "llmtest-model"

// PNG is a valid 1x1 PNG, for image round trips.
var PNG = []byte{
	0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
	0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
	0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
	0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
}

var echoTool = llm.Tool{
	Name:        "echo",
	Description: "Echo the text back.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"what to echo"},"times":{"type":"integer"}},"required":["text"],"additionalProperties":false}`),
}

var shotTool = llm.Tool{
	Name:        "shot",
	Description: "Take a picture.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{}}`),
}

// hello is the request of the cases that only need an answer. complete
// copies it, since the cases run in parallel.
var hello = &llm.Request{System: "You are a test.", Messages: []llm.Message{{Role: llm.RoleUser, Text: "Say hello."}}}

// behaviour is one case of a suite: its subtest's name, which is what a
// failure reports, and its test.
type behaviour struct {
	name string
	test func(t *testing.T)
}

// runBehaviours runs each case as a parallel subtest of t, in order.
func runBehaviours(t *testing.T, cases []behaviour) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.test(t)
		})
	}
}

// Run is the conformance suite every llm.Provider passes: one parallel
// subtest per behaviour, each with a scripted server of its own. The
// replies are in suite_replies.go, the faults in suite_faults.go.
func Run(t *testing.T, newProvider Factory) {
	s := &suite{newProvider: newProvider}
	runBehaviours(t, []behaviour{
		// Replies and requests.
		{"TextReply", s.textReply},
		{"ToolCallRoundTrip", s.toolCallRoundTrip},
		{"Images", s.images},
		{"Usage", s.usage},
		{"StopMaxTokens", s.stopMaxTokens},
		{"MalformedArgumentsSurvive", s.malformedArgumentsSurvive},
		// Faults.
		{"RetriesRateLimit", s.retriesRateLimit},
		{"RetriesServerErrorsAndDrops", s.retriesServerErrorsAndDrops},
		{"RetriesAnswersCutOff", s.retriesAnswersCutOff},
		{"AnswersCutOffUntilRetriesRunOut", s.answersCutOffUntilRetriesRunOut},
		{"RetriesTimeout", s.retriesTimeout},
		{"UnauthorizedIsClearAndNotRetried", s.unauthorizedIsClearAndNotRetried},
		{"KeepsFailing", s.keepsFailing},
		{"BadRequestSaysWhy", s.badRequestSaysWhy},
		{"Cancel", s.cancel},
	})
}

// suite holds what Run's cases share: the provider under test.
type suite struct {
	newProvider Factory
}

// setup starts a scripted server playing opts and builds the provider
// against it; zero fields of opts and cfg take the suite's defaults.
func (s *suite) setup(t *testing.T, opts Options, cfg Config) (*Server, llm.Provider) {
	t.Helper()
	if opts.APIKey == "" {
		opts.APIKey = TestKey
	}
	if cfg.APIKey == "" {
		cfg.APIKey = TestKey
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = 3
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = 10 * time.Second
	}
	srv := NewServer(t, opts)
	return srv, s.newProvider(t, srv, cfg)
}

// complete sends a copy of req (with Model unless it names another).
func (s *suite) complete(t *testing.T, p llm.Provider, req *llm.Request) (*llm.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	r := *req // the suite's requests are shared by parallel tests
	if r.Model == "" {
		r.Model = Model
	}
	return p.Complete(ctx, &r)
}

func checkImage(t *testing.T, img llm.Image) int {
	t.Helper()
	if img.MediaType != "image/png" || !bytes.Equal(img.Data, PNG) {
		t.Errorf("image %s of %d bytes; want the test PNG", img.MediaType, len(img.Data))
	}
	return 1
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return cmp.Equal(x, y)
}
