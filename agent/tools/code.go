package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/toolbox"
)

var codeDef = llm.Tool{
	Name: NameCode,
	Description: `Run code in the sandbox and get its output.
* python runs in a persistent Jupyter (IPython) kernel: variables, imports and definitions survive from one call to the next. The value of the last expression is shown; figures (matplotlib) come back as images. The kernel's working directory is the workspace.
* javascript runs with node; typescript is type-checked and run with node. Each call is a fresh process.
Use bash for shell commands and for running programs and test suites; use this for quick computations, data exploration and trying out snippets.`,
	InputSchema: schema(`{"type":"object","properties":{
"language":{"type":"string","enum":["python","javascript","typescript"],"description":"The language of the code."},
"code":{"type":"string","description":"The code to run."}},
"required":["language","code"]}`),
}

// maxCodeImages bounds the images one call returns.
const maxCodeImages = 4

type code struct{ env *Env }

func (c *code) run(ctx context.Context, input json.RawMessage) Result {
	var in struct {
		Language string `json:"language"`
		Code     string `json:"code"`
	}
	if err := decode(input, &in); err != nil {
		return errorf("execute_code: %v", err)
	}
	lang := strings.ToLower(strings.TrimSpace(in.Language))
	switch lang {
	case "py", "python3":
		lang = toolbox.LangPython
	case "js", "node":
		lang = toolbox.LangJavaScript
	case "ts":
		lang = toolbox.LangTypeScript
	}
	switch lang {
	case toolbox.LangPython, toolbox.LangJavaScript, toolbox.LangTypeScript:
	default:
		return errorf("execute_code: language must be python, javascript or typescript, not %q", in.Language)
	}
	if strings.TrimSpace(in.Code) == "" {
		return errorf("execute_code: code is required")
	}
	res, err := c.env.Box.RunCode(ctx, toolbox.CodeRequest{Language: lang, Code: in.Code, Timeout: drydock.Duration(c.env.CodeTimeout)})
	if err != nil {
		if drydock.ErrorCode(err) == drydock.ENOTIMPLEMENTED {
			return errorf("execute_code is not available in this sandbox (%s). Use bash instead (python3, node).", drydock.ErrorMessage(err))
		}
		return failure("execute_code", err)
	}
	var sb strings.Builder
	var out Result
	for _, o := range res.Outputs {
		switch o.Kind {
		case toolbox.OutputStream:
			sb.WriteString(o.Text)
		case toolbox.OutputResult:
			if sb.Len() > 0 && !strings.HasSuffix(sb.String(), "\n") {
				sb.WriteString("\n")
			}
			sb.WriteString(o.Text)
			sb.WriteString("\n")
		case toolbox.OutputError:
			if sb.Len() > 0 && !strings.HasSuffix(sb.String(), "\n") {
				sb.WriteString("\n")
			}
			text := o.Text
			if o.Name != "" && !strings.Contains(text, o.Name) {
				text = o.Name + ": " + text
			}
			sb.WriteString(text + "\n")
		case toolbox.OutputImage:
			if len(out.Images) < maxCodeImages && validImage(o.MimeType) {
				out.Images = append(out.Images, Image{Image: llm.Image{MediaType: o.MimeType, Data: o.Data}})
			} else {
				sb.WriteString(fmt.Sprintf("[an image (%s) was left out]\n", o.MimeType))
			}
		}
	}
	text := strings.TrimRight(sb.String(), "\n")
	if res.TimedOut {
		text += fmt.Sprintf("\n[The code ran longer than %s and was interrupted.]", c.env.CodeTimeout)
	}
	if o := res.OutOfMemory; o != nil {
		text += "\n[" + capitalize(o.Message) + "]"
	}
	if text == "" {
		text = "(no output)"
		if len(out.Images) > 0 {
			text = fmt.Sprintf("(%d image(s))", len(out.Images))
		}
	}
	out.Output = strings.TrimLeft(text, "\n")
	out.IsError = res.Error || res.TimedOut || res.OutOfMemory != nil
	return out
}

func validImage(mt string) bool {
	switch mt {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}
