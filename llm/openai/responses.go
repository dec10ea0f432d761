package openai

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// completeResponses sends a request through the Responses API. Nothing is
// stored at OpenAI (store=false): every request carries the whole
// conversation, reasoning included as encrypted items, so that a job
// survives a restart from its own event log and works for organisations
// under zero data retention.
func (p *Provider) completeResponses(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	params, err := p.responsesParams(req)
	if err != nil {
		return nil, err
	}
	res, err := p.client.Responses.New(ctx, params)
	if err != nil {
		var apiErr *sdk.Error
		if errors.As(err, &apiErr) && (apiErr.StatusCode == http.StatusNotFound || apiErr.StatusCode == http.StatusMethodNotAllowed) && !officialHost(p.base) {
			// An OpenAI-compatible server without the Responses API: say
			// how to go back to the dialect it speaks.
			return nil, fmt.Errorf("%w: %w", drydock.Errorf(drydock.EINVALID,
				"the server at %s has no Responses API (%d on /responses): use --openai-api chat (DRYDOCK_OPENAI_API=chat) for OpenAI-compatible servers", hostOf(p.base), apiErr.StatusCode), err)
		}
		return nil, classify(ctx, err)
	}
	return convertResponses(res, req.Model)
}

func (p *Provider) responsesParams(req *llm.Request) (responses.ResponseNewParams, error) {
	params := responses.ResponseNewParams{
		Model: shared.ResponsesModel(req.Model),
		Store: sdk.Bool(false),
	}
	if req.System != "" {
		params.Instructions = sdk.String(req.System)
	}
	if req.MaxTokens > 0 {
		params.MaxOutputTokens = sdk.Int(int64(req.MaxTokens))
	}
	if p.effort.reasons(req.Model) {
		// Without it a store=false response's reasoning cannot be sent
		// back; models that do not reason refuse the include.
		params.Include = []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}
	}
	if e := p.effort.forModel(req.Model); e != "" {
		params.Reasoning = shared.ReasoningParam{Effort: shared.ReasoningEffort(e)}
	}
	var input responses.ResponseInputParam
	for i, m := range req.Messages {
		switch m.Role {
		case llm.RoleAssistant:
			input = append(input, assistantItems(m, req.Model)...)
		case llm.RoleUser:
			input = append(input, userItems(m)...)
		default:
			return params, fmt.Errorf("openai: message %d has unknown role %q", i, m.Role)
		}
	}
	params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: input}
	for _, t := range req.Tools {
		var schema map[string]any
		if err := json.Unmarshal(t.InputSchema, &schema); err != nil {
			return params, fmt.Errorf("openai: schema of tool %s: %w", t.Name, err)
		}
		params.Tools = append(params.Tools, responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{
			Name:        t.Name,
			Description: sdk.String(t.Description),
			Parameters:  schema,
			// The Responses API makes functions strict unless told not
			// to, and strict mode refuses schemas with optional fields.
			Strict: sdk.Bool(false),
		}})
	}
	if req.NoToolCalls && len(params.Tools) > 0 {
		params.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: sdk.Opt(responses.ToolChoiceOptionsNone)}
	}
	return params, nil
}

// assistantItems sends back an assistant turn: as the output items the
// model produced, in their order, when the turn carries our state of the
// same model (so its reasoning goes with it: another model, as in a
// follow-up job that changed models, cannot read it), else as a message
// and function calls.
func assistantItems(m llm.Message, model string) []responses.ResponseInputItemUnionParam {
	var out []responses.ResponseInputItemUnionParam
	textSent := false
	calls := make([]bool, len(m.ToolCalls))
	// message sends the turn's text once: as the model's message item when
	// the state names one (even if the text is empty, so that a reasoning
	// item before it keeps its following item), else only when there is
	// text.
	message := func(id, phase string) {
		if textSent || id == "" && m.Text == "" {
			return
		}
		textSent = true
		if id == "" {
			out = append(out, responses.ResponseInputItemUnionParam{OfMessage: &responses.EasyInputMessageParam{
				Role:    responses.EasyInputMessageRoleAssistant,
				Content: responses.EasyInputMessageContentUnionParam{OfString: sdk.String(m.Text)},
			}})
			return
		}
		out = append(out, responses.ResponseInputItemUnionParam{OfOutputMessage: &responses.ResponseOutputMessageParam{
			ID:     id,
			Phase:  responses.ResponseOutputMessagePhase(phase),
			Status: responses.ResponseOutputMessageStatusCompleted,
			Content: []responses.ResponseOutputMessageContentUnionParam{{OfOutputText: &responses.ResponseOutputTextParam{
				Text: m.Text, Annotations: []responses.ResponseOutputTextAnnotationUnionParam{},
			}}},
		}})
	}
	call := func(i int, id string) {
		if i < 0 || i >= len(calls) || calls[i] {
			return
		}
		calls[i] = true
		c := m.ToolCalls[i]
		fc := &responses.ResponseFunctionToolCallParam{CallID: c.ID, Name: c.Name, Arguments: string(llm.ObjectInput(c.Input))}
		if id != "" {
			fc.ID = sdk.String(id)
		}
		out = append(out, responses.ResponseInputItemUnionParam{OfFunctionCall: fc})
	}
	if st := decodeState(m.Reasoning); st != nil && st.Model == bareModel(model) {
		// A reasoning item goes only with the item that followed it (the
		// API refuses it alone); the items after one that cannot be sent
		// lose their ids, which would tell the API to expect it.
		sent := st.sent(m)
		lost := false
		for i, it := range st.Items {
			switch it.Type {
			case "reasoning":
				lost = !it.intact() || i+1 >= len(st.Items) || !sent[i+1]
				if lost {
					continue
				}
				r := &responses.ResponseReasoningItemParam{
					ID:               it.ID,
					EncryptedContent: sdk.String(it.EncryptedContent),
					Summary:          []responses.ResponseReasoningItemSummaryParam{},
				}
				for _, s := range it.Summary {
					r.Summary = append(r.Summary, responses.ResponseReasoningItemSummaryParam{Text: s})
				}
				out = append(out, responses.ResponseInputItemUnionParam{OfReasoning: r})
			case "message":
				message(keepID(it.ID, lost), it.Phase)
			case "function_call":
				call(it.Call, keepID(it.ID, lost))
			}
		}
	}
	message("", "")
	for i := range calls {
		call(i, "")
	}
	return out
}

func keepID(id string, lost bool) string {
	if lost {
		return ""
	}
	return id
}

// userItems sends a user turn: one function_call_output per tool result,
// in order, with the result's images inside it, then the text and images
// of the turn as a user message.
func userItems(m llm.Message) []responses.ResponseInputItemUnionParam {
	var out []responses.ResponseInputItemUnionParam
	for _, r := range m.ToolResults {
		text := r.Output
		if r.IsError {
			text = "Error: " + text
		}
		if text == "" {
			text = "(no output)"
		}
		o := &responses.ResponseInputItemFunctionCallOutputParam{CallID: sdk.String(r.CallID)}
		if len(r.Images) == 0 {
			o.Output.OfString = sdk.String(text)
		} else {
			list := responses.ResponseFunctionCallOutputItemListParam{{OfInputText: &responses.ResponseInputTextContentParam{Text: text}}}
			for _, img := range r.Images {
				list = append(list, responses.ResponseFunctionCallOutputItemUnionParam{OfInputImage: &responses.ResponseInputImageContentParam{
					ImageURL: sdk.String(dataURL(img)),
					Detail:   responses.ResponseInputImageContentDetailAuto,
				}})
			}
			o.Output.OfResponseFunctionCallOutputItemArray = list
		}
		out = append(out, responses.ResponseInputItemUnionParam{OfFunctionCallOutput: o})
	}
	var parts responses.ResponseInputMessageContentListParam
	if m.Text != "" {
		parts = append(parts, responses.ResponseInputContentUnionParam{OfInputText: &responses.ResponseInputTextParam{Text: m.Text}})
	}
	for _, img := range m.Images {
		parts = append(parts, responses.ResponseInputContentUnionParam{OfInputImage: &responses.ResponseInputImageParam{
			ImageURL: sdk.String(dataURL(img)),
			Detail:   responses.ResponseInputImageDetailAuto,
		}})
	}
	switch {
	case len(parts) == 1 && parts[0].OfInputText != nil:
		out = append(out, responses.ResponseInputItemUnionParam{OfMessage: &responses.EasyInputMessageParam{
			Role: responses.EasyInputMessageRoleUser, Content: responses.EasyInputMessageContentUnionParam{OfString: sdk.String(m.Text)},
		}})
	case len(parts) > 0:
		out = append(out, responses.ResponseInputItemUnionParam{OfMessage: &responses.EasyInputMessageParam{
			Role: responses.EasyInputMessageRoleUser, Content: responses.EasyInputMessageContentUnionParam{OfInputItemContentList: parts},
		}})
	}
	return out
}

func dataURL(img llm.Image) string {
	return "data:" + img.MediaType + ";base64," + base64.StdEncoding.EncodeToString(img.Data)
}

// convertResponses reads an answer to a request for model.
func convertResponses(res *responses.Response, model string) (*llm.Response, error) {
	if res.Status == responses.ResponseStatusFailed {
		// A response that failed while the model generated it: the
		// request was fine and may succeed again.
		msg := res.Error.Message
		if msg == "" {
			msg = string(res.Error.Code)
		}
		if len(msg) > 300 {
			msg = msg[:300] + "..."
		}
		return nil, drydock.Errorf(drydock.EUNAVAILABLE, "the %s API failed to generate a response (model %s)%s", Vendor.Name, res.Model, suffix(msg))
	}
	out := &llm.Response{Model: string(res.Model)}
	var st turnState
	var text, refusal []string
	// skipped is set after a reasoning item that cannot go back: the items
	// after it are kept without ids, which would make the API ask for it.
	skipped := false
	id := func(id string) string {
		if skipped {
			return ""
		}
		return id
	}
	for _, item := range res.Output {
		switch item.Type {
		case "reasoning":
			r := item.AsReasoning()
			skipped = r.EncryptedContent == ""
			if skipped {
				// Without store there is nothing to refer to: it cannot
				// be sent back (the model was not asked for it).
				continue
			}
			it := stateItem{Type: "reasoning", ID: r.ID, EncryptedContent: r.EncryptedContent, Sum: reasoningSum(r.ID, r.EncryptedContent)}
			for _, s := range r.Summary {
				it.Summary = append(it.Summary, s.Text)
			}
			st.Items = append(st.Items, it)
		case "message":
			for _, c := range item.Content {
				switch c.Type {
				case "output_text":
					text = append(text, c.Text)
				case "refusal":
					refusal = append(refusal, c.Refusal)
				}
			}
			st.Items = append(st.Items, stateItem{Type: "message", ID: id(item.ID), Phase: string(item.Phase)})
		case "function_call":
			args := strings.TrimSpace(item.Arguments.OfString)
			if args == "" {
				args = "{}"
			}
			input := json.RawMessage(args)
			if !json.Valid(input) {
				// As in chat completions: the agent answers with an
				// error the model can correct.
				input, _ = json.Marshal(args)
			}
			st.Items = append(st.Items, stateItem{Type: "function_call", ID: id(item.ID), Call: len(out.ToolCalls)})
			out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: item.CallID, Name: item.Name, Input: input})
		}
	}
	out.Text = strings.Join(text, "\n\n")
	if out.Text == "" {
		out.Text = strings.Join(refusal, "\n\n")
	}
	st.Model = bareModel(model)
	out.Reasoning = st.encode()
	switch {
	case res.Status == responses.ResponseStatusIncomplete && res.IncompleteDetails.Reason == "max_output_tokens":
		out.StopReason = llm.StopMaxTokens
	case res.Status == responses.ResponseStatusIncomplete:
		out.StopReason = llm.StopOther
	case len(out.ToolCalls) > 0:
		out.StopReason = llm.StopToolUse
	case len(refusal) > 0 && len(text) == 0:
		out.StopReason = llm.StopOther
	default:
		out.StopReason = llm.StopEndTurn
	}
	u := res.Usage
	cached := u.InputTokensDetails.CachedTokens
	written := u.InputTokensDetails.CacheWriteTokens
	out.Usage = llm.Usage{
		InputTokens:      max(u.InputTokens-cached-written, 0),
		OutputTokens:     u.OutputTokens,
		CacheReadTokens:  cached,
		CacheWriteTokens: written,
		ReasoningTokens:  u.OutputTokensDetails.ReasoningTokens,
	}
	return out, nil
}

func suffix(detail string) string {
	if detail == "" {
		return ""
	}
	return ": " + detail
}
