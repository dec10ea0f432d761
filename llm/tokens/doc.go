// Package tokens counts the tokens of model requests without calling the
// model, and derives a prompt budget from a model's context window.
//
// OpenAI models are counted exactly with their byte-pair encodings
// (o200k_base for the GPT-4o, GPT-4.1, GPT-5 and o-series families,
// cl100k_base for GPT-4 and GPT-3.5), which github.com/tiktoken-go/tokenizer
// embeds, so nothing is downloaded at run time. Anthropic publishes no
// tokenizer, so Claude models get a conservative estimate (3.5 bytes of
// ASCII per token, one token per other character).
//
// Neither is what the provider finally bills: chat formats add framing,
// tool definitions are rewritten server-side, and OpenAI-compatible servers
// run other tokenizers. A Meter therefore keeps the ratio between the
// prompt tokens the provider reported and the tokens counted for the same
// request, and scales later counts by it.
//
//	m := tokens.NewMeter(tokens.For("anthropic", "claude-sonnet-4-5"))
//	counted := m.Request(req)    // before sending
//	estimate := m.Scale(counted) // what the provider should report
//	resp, _ := provider.Complete(ctx, req)
//	m.Observe(counted, resp.Usage)
package tokens
