package anthropic

import (
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/drydockhq/drydock/llm"
)

// Names the built-in tools have in tool_use blocks; a tool of another name
// goes as a custom tool, since the model's calls would not find it.
var nativeNames = map[string]string{
	llm.NativeBash:       "bash",
	llm.NativeTextEditor: "str_replace_based_edit_tool",
	llm.NativeComputer:   "computer",
}

// Beta flags of the computer tool's versions.
var computerBetas = map[string]sdk.AnthropicBeta{
	"computer_20250124": sdk.AnthropicBetaComputerUse2025_01_24,
	"computer_20251124": sdk.AnthropicBetaComputerUse2025_11_24,
}

// toolParam sends t as the built-in tool the model was trained on when it
// has one for t's kind (see llm.Model), else as a custom tool. It returns
// the beta flag the built-in needs, if any.
func toolParam(t llm.Tool, model llm.Model) (sdk.BetaToolUnionParam, sdk.AnthropicBeta, error) {
	if n := t.Native; n != nil && nativeNames[n.Kind] == t.Name {
		switch n.Kind {
		case llm.NativeBash:
			if model.BashTool == "bash_20250124" {
				return sdk.BetaToolUnionParam{OfBashTool20250124: &sdk.BetaToolBash20250124Param{}}, "", nil
			}
		case llm.NativeTextEditor:
			switch model.EditorTool {
			case "text_editor_20250728":
				return sdk.BetaToolUnionParam{OfTextEditor20250728: &sdk.BetaToolTextEditor20250728Param{}}, "", nil
			case "text_editor_20250429":
				return sdk.BetaToolUnionParam{OfTextEditor20250429: &sdk.BetaToolTextEditor20250429Param{}}, "", nil
			}
		case llm.NativeComputer:
			if model.ComputerTool == "" {
				break
			}
			if n.DisplayWidth <= 0 || n.DisplayHeight <= 0 {
				return sdk.BetaToolUnionParam{}, "", fmt.Errorf("anthropic: the computer tool needs its display size, not %dx%d", n.DisplayWidth, n.DisplayHeight)
			}
			w, h := int64(n.DisplayWidth), int64(n.DisplayHeight)
			switch model.ComputerTool {
			case "computer_20250124":
				return sdk.BetaToolUnionParam{OfComputerUseTool20250124: &sdk.BetaToolComputerUse20250124Param{DisplayWidthPx: w, DisplayHeightPx: h}}, computerBetas[model.ComputerTool], nil
			case "computer_20251124":
				// Zoom is offered only by a tool that implements it: an
				// action the tool refuses costs the model steps.
				p := &sdk.BetaToolComputerUse20251124Param{DisplayWidthPx: w, DisplayHeightPx: h}
				if n.Zoom {
					p.EnableZoom = sdk.Bool(true)
				}
				return sdk.BetaToolUnionParam{OfComputerUseTool20251124: p}, computerBetas[model.ComputerTool], nil
			}
		}
	}
	schema, err := inputSchema(t.InputSchema)
	if err != nil {
		return sdk.BetaToolUnionParam{}, "", fmt.Errorf("anthropic: schema of tool %s: %w", t.Name, err)
	}
	tool := sdk.BetaToolParam{Name: t.Name, InputSchema: schema}
	if t.Description != "" {
		tool.Description = sdk.String(t.Description)
	}
	return sdk.BetaToolUnionParam{OfTool: &tool}, "", nil
}

// ThinkingBudget is the budget the provider thinks with for a model, given
// Config.ThinkingBudget: what a request adds to max_tokens, and so what a
// prompt must leave room for.
func ThinkingBudget(model string, configured int) int {
	m, _ := llm.LookupModel(model)
	return thinkingBudget(m, configured)
}

// thinkingBudget is the budget a request thinks with: the configured one
// (negative: off), else the model's default; 0 for models that cannot
// think.
func thinkingBudget(model llm.Model, configured int) int {
	switch {
	case !model.Thinking || configured < 0:
		return 0
	case configured > 0:
		return configured
	}
	return model.ThinkingBudget
}

// lastTurnThought reports whether thinking may be on for the next request.
// A tool-use loop is one assistant turn to the API, which takes one
// thinking mode for all of it: when the last user message (with those
// before it that merge into it) answers tool calls whose assistant message
// carries no thinking (thinking was off for it, or its blocks were lost),
// turning thinking on now would be refused, so the request goes without.
func lastTurnThought(msgs []llm.Message) bool {
	i, answers := len(msgs)-1, false
	for ; i >= 0 && msgs[i].Role == llm.RoleUser; i-- {
		answers = answers || len(msgs[i].ToolResults) > 0
	}
	if !answers || i < 0 {
		return true
	}
	a := msgs[i]
	return len(a.ToolCalls) == 0 || len(a.Reasoning.Thinking()) > 0
}
