package llmtest_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
)

// The Responses dialect refuses, as the API does, what a provider could get
// wrong: an unanswered call, reasoning sent back without its content under
// store=false or without the item that followed it, forged reasoning, and
// the strict default with an optional field.
func TestResponsesRulesAreChecked(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.Options{AllowProblems: true, Func: func(*llmtest.Request) llmtest.Turn {
		return llmtest.Turn{Reasoning: "think", ToolCalls: []llm.ToolCall{llmtest.Call("echo", `{}`)}}
	}})
	post := func(body string) (int, string) {
		t.Helper()
		res, err := http.Post(srv.OpenAIBaseURL()+"/responses", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(res.Body)
		return res.StatusCode, b.String()
	}
	// One good exchange issues rs_llmtest_1 and fc_llmtest_1_1.
	status, body := post(`{"model":"o3","store":false,"include":["reasoning.encrypted_content"],"input":"hi"}`)
	if status != 200 {
		t.Fatalf("first request: %d %s", status, body)
	}
	var first struct {
		Output []map[string]any `json:"output"`
	}
	json.Unmarshal([]byte(body), &first)
	enc, _ := first.Output[0]["encrypted_content"].(string)
	if enc == "" {
		t.Fatalf("first answer %s; want encrypted reasoning", body)
	}
	rs := func(content string) string {
		return `{"type":"reasoning","id":"rs_llmtest_1","summary":[]` + content + `}`
	}
	fc := `{"type":"function_call","id":"fc_llmtest_1_1","call_id":"call_1_1","name":"echo","arguments":"{}"}`
	out := `{"type":"function_call_output","call_id":"call_1_1","output":"ok"}`
	user := `{"role":"user","content":"hi"}`
	good := `,"encrypted_content":"` + enc + `"`
	for _, tc := range []struct{ name, input, want string }{
		{"unanswered call", user + "," + rs(good) + "," + fc, "No tool output found for function call call_1_1"},
		{"output without a call", user + "," + out, "No tool call found"},
		{"reasoning without content", user + "," + rs("") + "," + fc + "," + out, "Items are not persisted"},
		{"forged reasoning", user + "," + rs(`,"encrypted_content":"Zm9yZ2Vk"`) + "," + fc + "," + out, "could not be verified"},
		{"reasoning without its item", user + "," + rs(good) + "," + out, "without its required following item"},
		{"call without its reasoning", user + "," + fc + "," + out, "without its required 'reasoning' item"},
		{"previous reasoning dropped", user + `,{"type":"function_call","call_id":"call_1_1","name":"echo","arguments":"{}"},` + out, "must be passed back"},
	} {
		status, body := post(`{"model":"o3","store":false,"include":["reasoning.encrypted_content"],"input":[` + tc.input + `]}`)
		if status != 400 || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s; want 400 saying %q", tc.name, status, body, tc.want)
		}
	}
	status, body = post(`{"model":"o3","store":false,"input":[` + user + "," + rs(good) + "," + fc + "," + out + `]}`)
	if status != 200 {
		t.Errorf("the whole previous output sent back: %d %s; want 200", status, body)
	}
	status, body = post(`{"model":"o3","input":"hi","tools":[{"type":"function","name":"echo","parameters":{"type":"object","properties":{"text":{"type":"string"}}}}]}`)
	if status != 400 || !strings.Contains(body, "strict") {
		t.Errorf("strict by default with an optional field: %d %s; want 400", status, body)
	}
}
