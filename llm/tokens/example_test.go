package tokens_test

import (
	"fmt"

	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/tokens"
)

// A request is counted before it is sent; the provider's reply calibrates
// the counts of the requests that follow.
func Example() {
	m := tokens.NewMeter(tokens.For("openai", "gpt-4.1"))
	req := &llm.Request{Model: "gpt-4.1", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hello world"}}}
	counted := m.Request(req)
	fmt.Println(counted, m.Scale(counted))
	m.Observe(counted, llm.Usage{InputTokens: 18}) // what the provider reported
	fmt.Println(m.Scale(counted))
	fmt.Println(tokens.Budget("gpt-4.1", 8192, 0))
	// Output:
	// 9 9
	// 18
	// 1039384
}
