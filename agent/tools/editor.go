package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/toolbox"
)

var editorDef = llm.Tool{
	Name:   NameEditor,
	Native: &llm.NativeTool{Kind: llm.NativeTextEditor},
	Description: `View, create and edit files.
* view: a file's lines, numbered like ` + "`cat -n`" + ` (view_range [start, end] picks lines, end -1 means to the end), or a directory's files and directories up to 2 levels deep, hidden ones left out.
* create: write a new file with file_text. It refuses to overwrite an existing file: edit it instead.
* str_replace: replace old_str with new_str. old_str must match exactly one place of the file, whitespace included; include enough context to make it unique.
* insert: insert new_str after line insert_line (0 puts it at the top).
* undo_edit: revert the last edit made to the file with this tool.
Paths are absolute (in the workspace) or relative to the workspace.`,
	InputSchema: schema(`{"type":"object","properties":{
"command":{"type":"string","enum":["view","create","str_replace","insert","undo_edit"],"description":"What to do."},
"path":{"type":"string","description":"Absolute path of the file or directory, e.g. /workspace/app.py."},
"file_text":{"type":"string","description":"create: the content of the new file."},
"old_str":{"type":"string","description":"str_replace: the exact text to replace."},
"new_str":{"type":"string","description":"str_replace: the replacement (empty deletes old_str); insert: the text to insert."},
"insert_line":{"type":"integer","description":"insert: the line after which new_str goes (0 for the top)."},
"view_range":{"type":"array","items":{"type":"integer"},"description":"view: [start, end] lines, 1-based; end -1 means to the end."}},
"required":["command","path"]}`),
}

// snippetLines is how many lines around an edit the reply shows.
const snippetLines = 4

type editor struct {
	env *Env
	// history holds, per file, its content before each edit; exists is
	// false when the edit created the file. It lives in memory only.
	history map[string][]snapshot
}

type snapshot struct {
	data   []byte
	exists bool
}

type editorInput struct {
	Command    string  `json:"command"`
	Path       string  `json:"path"`
	FileText   *string `json:"file_text"`
	OldStr     *string `json:"old_str"`
	NewStr     *string `json:"new_str"`
	InsertLine *int    `json:"insert_line"`
	// InsertText is what the built-in text_editor_20250728 sends for
	// insert in place of new_str.
	InsertText *string `json:"insert_text"`
	ViewRange  []int   `json:"view_range"`
}

func (e *editor) run(ctx context.Context, input json.RawMessage) Result {
	var in editorInput
	if err := decode(input, &in); err != nil {
		return errorf("%v", err)
	}
	if strings.TrimSpace(in.Path) == "" {
		return errorf("path is required")
	}
	shown := e.env.abs(in.Path)
	p := e.env.rel(in.Path)
	switch in.Command {
	case "view":
		return e.view(ctx, p, shown, in.ViewRange)
	case "create":
		return e.create(ctx, p, shown, in.FileText)
	case "str_replace":
		return e.replace(ctx, p, shown, in.OldStr, in.NewStr)
	case "insert":
		text := in.NewStr
		if text == nil {
			text = in.InsertText
		}
		return e.insert(ctx, p, shown, in.InsertLine, text)
	case "undo_edit":
		return e.undo(ctx, p, shown)
	case "":
		return errorf("command is required: one of view, create, str_replace, insert, undo_edit")
	}
	return errorf("Unrecognized command %q. The allowed commands are: view, create, str_replace, insert, undo_edit", in.Command)
}

func (e *editor) view(ctx context.Context, p, shown string, vr []int) Result {
	fi, err := e.env.Box.Stat(ctx, p)
	if err != nil {
		return notFound(shown, err)
	}
	if fi.Type == toolbox.TypeDir {
		if len(vr) > 0 {
			return errorf("The `view_range` parameter is not allowed when `path` points to a directory.")
		}
		return e.viewDir(ctx, p, shown)
	}
	if len(vr) == 0 {
		data, err := e.env.Box.ReadFile(ctx, p)
		if err != nil {
			return failure("view "+shown, err)
		}
		if !utf8.Valid(data) {
			return errorf("%s is a binary file (%d bytes); inspect it with bash (file, xxd, head -c).", shown, len(data))
		}
		return Result{Output: numbered(shown, string(data), 1)}
	}
	if len(vr) != 2 {
		return errorf("Invalid `view_range`. It should be a list of two integers.")
	}
	start, end := vr[0], vr[1]
	if start < 1 {
		return errorf("Invalid `view_range`: %v. Its first element `%d` should be at least 1.", vr, start)
	}
	if end != -1 && end < start {
		return errorf("Invalid `view_range`: %v. Its second element `%d` should be larger or equal than its first `%d`, or -1.", vr, end, start)
	}
	data, total, err := e.env.Box.ReadLines(ctx, p, start, max(end, 0))
	if err != nil {
		return failure("view "+shown, err)
	}
	if start > max(total, 1) {
		return errorf("Invalid `view_range`: %v. Its first element `%d` should be within the range of lines of the file: [1, %d]", vr, start, total)
	}
	if end > total {
		return errorf("Invalid `view_range`: %v. Its second element `%d` should be smaller than the number of lines in the file: `%d`", vr, end, total)
	}
	if !utf8.Valid(data) {
		return errorf("%s is a binary file; inspect it with bash (file, xxd, head -c).", shown)
	}
	return Result{Output: numbered(shown, string(data), start)}
}

func (e *editor) viewDir(ctx context.Context, p, shown string) Result {
	res, err := e.env.Box.ListDepth(ctx, p, 2)
	if err != nil {
		return failure("view "+shown, err)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "Here are the files and directories up to 2 levels deep in %s, excluding hidden items:\n%s\n", shown, shown)
	root := e.env.abs(p)
	prefix := strings.TrimSuffix(p, "/") + "/"
	if p == "." {
		prefix = ""
	}
	for _, fi := range res.Entries {
		sub := strings.TrimPrefix(fi.Path, prefix)
		if hidden(sub) {
			continue
		}
		name := path.Join(root, sub)
		if fi.Type == toolbox.TypeDir {
			name += "/"
		}
		sb.WriteString(name + "\n")
	}
	if res.Truncated {
		sb.WriteString("[The listing was cut; use bash (find, ls) for the rest.]\n")
	}
	return Result{Output: strings.TrimRight(sb.String(), "\n")}
}

func hidden(rel string) bool {
	for _, part := range strings.Split(rel, "/") {
		if strings.HasPrefix(part, ".") {
			return true
		}
	}
	return false
}

func (e *editor) create(ctx context.Context, p, shown string, text *string) Result {
	if text == nil {
		return errorf("Parameter `file_text` is required for command: create")
	}
	if fi, err := e.env.Box.Stat(ctx, p); err == nil {
		if fi.Type == toolbox.TypeDir {
			return errorf("%s is a directory; give the path of a file to create.", shown)
		}
		return errorf("File already exists at: %s. Cannot overwrite files using command `create`: edit it with str_replace, or remove it with bash first.", shown)
	} else if drydock.ErrorCode(err) != drydock.ENOTFOUND {
		return failure("create "+shown, err)
	}
	if err := e.env.Box.WriteFile(ctx, p, []byte(*text)); err != nil {
		return failure("create "+shown, err)
	}
	e.history[p] = append(e.history[p], snapshot{exists: false})
	return Result{Output: "File created successfully at: " + shown}
}

func (e *editor) read(ctx context.Context, p, shown string) (string, Result, bool) {
	fi, err := e.env.Box.Stat(ctx, p)
	if err != nil {
		return "", notFound(shown, err), false
	}
	if fi.Type == toolbox.TypeDir {
		return "", errorf("%s is a directory; only files can be edited.", shown), false
	}
	data, err := e.env.Box.ReadFile(ctx, p)
	if err != nil {
		return "", failure("read "+shown, err), false
	}
	if !utf8.Valid(data) {
		return "", errorf("%s is a binary file; it cannot be edited with this tool.", shown), false
	}
	return string(data), Result{}, true
}

func (e *editor) replace(ctx context.Context, p, shown string, oldStr, newStr *string) Result {
	if oldStr == nil || *oldStr == "" {
		return errorf("Parameter `old_str` is required for command: str_replace, and must not be empty")
	}
	content, res, ok := e.read(ctx, p, shown)
	if !ok {
		return res
	}
	n := strings.Count(content, *oldStr)
	if n == 0 {
		return errorf("No replacement was performed, old_str `%s` did not appear verbatim in %s.", clip(*oldStr, 500), shown)
	}
	if n > 1 {
		var lines []int
		for i, off := 0, 0; i < n; i++ {
			k := strings.Index(content[off:], *oldStr)
			lines = append(lines, strings.Count(content[:off+k], "\n")+1)
			off += k + len(*oldStr)
		}
		return errorf("No replacement was performed. Multiple occurrences of old_str `%s` in lines %v. Please ensure it is unique", clip(*oldStr, 500), lines)
	}
	repl := ""
	if newStr != nil {
		repl = *newStr
	}
	at := strings.Index(content, *oldStr)
	updated := content[:at] + repl + content[at+len(*oldStr):]
	if err := e.env.Box.WriteFile(ctx, p, []byte(updated)); err != nil {
		return failure("write "+shown, err)
	}
	e.history[p] = append(e.history[p], snapshot{data: []byte(content), exists: true})
	first := strings.Count(content[:at], "\n") + 1
	last := first + strings.Count(repl, "\n")
	return Result{Output: fmt.Sprintf("The file %s has been edited. Here's the result of running `cat -n` on a snippet of %s:\n%s\nReview the changes and make sure they are as expected. Edit the file again if necessary.",
		shown, shown, snippet(updated, first, last))}
}

func (e *editor) insert(ctx context.Context, p, shown string, line *int, newStr *string) Result {
	if line == nil {
		return errorf("Parameter `insert_line` is required for command: insert")
	}
	if newStr == nil {
		return errorf("Parameter `insert_text` (or `new_str`) is required for command: insert")
	}
	content, res, ok := e.read(ctx, p, shown)
	if !ok {
		return res
	}
	lines := splitLines(content)
	if *line < 0 || *line > len(lines) {
		return errorf("Invalid `insert_line` parameter: %d. It should be within the range of lines of the file: [0, %d]", *line, len(lines))
	}
	text := *newStr
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	before := strings.Join(lines[:*line], "")
	if before != "" && !strings.HasSuffix(before, "\n") {
		before += "\n" // the file's last line had no newline
	}
	updated := before + text + strings.Join(lines[*line:], "")
	if err := e.env.Box.WriteFile(ctx, p, []byte(updated)); err != nil {
		return failure("write "+shown, err)
	}
	e.history[p] = append(e.history[p], snapshot{data: []byte(content), exists: true})
	first := *line + 1
	last := *line + strings.Count(text, "\n")
	return Result{Output: fmt.Sprintf("The file %s has been edited. Here's the result of running `cat -n` on a snippet of the edited file:\n%s\nReview the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the file again if necessary.",
		shown, snippet(updated, first, last))}
}

func (e *editor) undo(ctx context.Context, p, shown string) Result {
	h := e.history[p]
	if len(h) == 0 {
		if e.env.Resumed {
			return errorf("No edit history found for %s. (The history of edits is kept in memory and was lost when the agent restarted; restore the file by hand, e.g. with git.)", shown)
		}
		return errorf("No edit history found for %s.", shown)
	}
	last := h[len(h)-1]
	if !last.exists {
		if err := e.env.Box.Delete(ctx, p, false); err != nil && drydock.ErrorCode(err) != drydock.ENOTFOUND {
			return failure("undo "+shown, err)
		}
		e.history[p] = h[:len(h)-1]
		return Result{Output: fmt.Sprintf("Last edit to %s undone successfully: the file it created was removed.", shown)}
	}
	if err := e.env.Box.WriteFile(ctx, p, last.data); err != nil {
		return failure("undo "+shown, err)
	}
	e.history[p] = h[:len(h)-1]
	return Result{Output: fmt.Sprintf("Last edit to %s undone successfully. %s", shown, numbered(shown, string(last.data), 1))}
}

func notFound(shown string, err error) Result {
	if drydock.ErrorCode(err) == drydock.ENOTFOUND {
		return errorf("The path %s does not exist. Please provide a valid path.", shown)
	}
	return failure(shown, err)
}

// splitLines splits s into lines that keep their newlines.
func splitLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// numbered renders text as `cat -n` would, its first line numbered first.
func numbered(shown, text string, first int) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "Here's the result of running `cat -n` on %s:\n", shown)
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		fmt.Fprintf(&sb, "%6d\t%s\n", first+i, line)
	}
	return strings.TrimRight(sb.String(), "\n")
}

// snippet shows lines first..last of text with some context, numbered.
func snippet(text string, first, last int) string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	from := max(first-snippetLines, 1)
	to := min(last+snippetLines, len(lines))
	var sb strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&sb, "%6d\t%s\n", i, lines[i-1])
	}
	return strings.TrimRight(sb.String(), "\n")
}
