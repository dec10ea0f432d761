package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/transcript"
	"github.com/drydockhq/drydock/toolbox"
)

// Files is the part of toolboxd's client a History reads saved outputs
// with; *toolbox.Client implements it.
type Files interface {
	ListDepth(ctx context.Context, path string, depth int) (*toolbox.ListResult, error)
	ReadFile(ctx context.Context, path string) ([]byte, error)
	ReadLines(ctx context.Context, path string, start, end int) ([]byte, int, error)
}

// Limits on reading saved outputs: a whole file up to maxFileBytes, else
// its first maxFileLines lines.
const (
	maxFileBytes = 4 << 20
	maxFileLines = 20000
)

// outputPath finds the saved outputs an observation's text names.
var outputPath = regexp.MustCompile(`[\w./-]*\.drydock/outputs/[\w.-]+`)

// History indexes a job's event log and its saved outputs for recall. It
// is not safe for concurrent use (one run, one goroutine).
type History struct {
	ix    *Index
	files Files
	dir   string // saved outputs, relative to the workspace; "" for none
	seen  int    // events indexed so far
	sizes map[string]int64
	// labels names the step a saved output belongs to, by file name.
	labels map[string]string
}

// NewHistory returns a History that reads saved outputs from dir (relative
// to the workspace) through files; a nil files indexes the log only.
func NewHistory(files Files, dir string) *History {
	return &History{ix: NewIndex(), files: files, dir: dir, sizes: map[string]int64{}, labels: map[string]string{}}
}

// Index is the index the History fills.
func (h *History) Index() *Index { return h.ix }

// Read indexes the events it has not seen (the log only grows). The
// agent calls it after every step, so that the first recall does not pay
// for indexing the whole log.
func (h *History) Read(events []*drydock.Event) {
	if h.seen > len(events) {
		h.seen = 0 // a different log: start over
	}
	for i := h.seen; i < len(events); i++ {
		h.add(i, events[i])
	}
	h.seen = len(events)
}

// Sync indexes the events it has not seen and the saved outputs that are
// new or have grown since.
func (h *History) Sync(ctx context.Context, events []*drydock.Event) error {
	h.Read(events)
	if h.files == nil || h.dir == "" {
		return nil
	}
	list, err := h.files.ListDepth(ctx, h.dir, 1)
	if err != nil {
		if drydock.ErrorCode(err) == drydock.ENOTFOUND {
			return nil // nothing saved yet
		}
		return fmt.Errorf("list saved outputs: %w", err)
	}
	for _, f := range list.Entries {
		if f.Type != "file" || h.sizes[f.Path] == f.Size {
			continue
		}
		text, note, err := h.read(ctx, f)
		if err != nil {
			return fmt.Errorf("read saved output %s: %w", f.Path, err)
		}
		label := "saved output " + f.Path
		if l, ok := h.labels[path.Base(f.Path)]; ok {
			label = l + ", whole output in " + f.Path
		}
		h.ix.Add("file:"+f.Path, label+note, text)
		h.sizes[f.Path] = f.Size
	}
	return nil
}

func (h *History) read(ctx context.Context, f toolbox.FileInfo) (string, string, error) {
	if f.Size <= maxFileBytes {
		data, err := h.files.ReadFile(ctx, f.Path)
		return string(data), "", err
	}
	data, total, err := h.files.ReadLines(ctx, f.Path, 1, maxFileLines)
	return string(data), fmt.Sprintf(" (first %d of %d lines)", maxFileLines, total), err
}

// add indexes one event: what the model said and did, what the tools
// returned, errors and notes. Recall results would find themselves, and
// the context manager's notes and summaries only restate the log.
func (h *History) add(i int, e *drydock.Event) {
	key := fmt.Sprintf("event:%d", i)
	switch e.Type {
	case drydock.EventModel:
		var t transcript.ModelTurn
		if json.Unmarshal(e.Data, &t) != nil {
			return
		}
		text := t.Text
		for _, c := range t.ToolCalls {
			if c.Name != "recall" { // its query would find itself
				text += fmt.Sprintf("\n%s %s", c.Name, c.Input)
			}
		}
		if text = strings.TrimSpace(text); text != "" {
			h.ix.Add(key, fmt.Sprintf("step %d, your turn", t.Step), text)
		}
	case drydock.EventObservation:
		var o transcript.Observation
		if json.Unmarshal(e.Data, &o) != nil || o.Name == "recall" {
			return
		}
		label := fmt.Sprintf("step %d, %s result", o.Step, o.Name)
		if o.IsError {
			label += " (error)"
		}
		for _, p := range outputPath.FindAllString(o.Output, -1) {
			h.labels[path.Base(p)] = label
		}
		if o.OutputPath != "" {
			h.labels[path.Base(o.OutputPath)] = label
			label += ", cut; whole output in " + o.OutputPath
		}
		h.ix.Add(key, label, o.Output)
	case drydock.EventError, drydock.EventLog:
		// An error event's one field, message, is a log event's too.
		var m drydock.LogEvent
		if json.Unmarshal(e.Data, &m) != nil || m.Message == "" || strings.HasPrefix(m.Kind, "context") {
			return
		}
		label := "note (" + string(e.Type) + ")"
		if m.Notice {
			label = fmt.Sprintf("note to you after step %d", m.Step)
		}
		h.ix.Add(key, label, m.Message)
	}
}

// Recall brings the index up to date with events and the saved outputs,
// then answers a query with the best passages, in at most maxBytes (0: no
// limit).
func (h *History) Recall(ctx context.Context, events []*drydock.Event, query string, hits, maxBytes int) (string, error) {
	if err := h.Sync(ctx, events); err != nil {
		return "", err
	}
	return Format(query, h.ix.Search(query, hits), h.ix.Len(), maxBytes), nil
}

// Format renders hits for the model, best first, in about maxBytes at
// most (0: no limit); the best hit is always shown, cut if it must be.
func Format(query string, hits []Hit, searched, maxBytes int) string {
	if len(hits) == 0 {
		return fmt.Sprintf("Nothing in the job's history (%d passages) matches %q.", searched, query)
	}
	head := func(n int) string {
		return fmt.Sprintf("The best %d of %d passages of the job's history for %q, best first:\n", n, searched, query)
	}
	var body strings.Builder
	shown := 0
	for _, hit := range hits {
		block := fmt.Sprintf("\n--- %s ---\n%s\n", hit.Label, hit.Text)
		if maxBytes > 0 && len(head(shown+1))+body.Len()+len(block) > maxBytes {
			if shown == 0 {
				room := max(maxBytes-len(head(1)), 200)
				body.WriteString(strings.ToValidUTF8(block[:min(room, len(block))], "") + "\n[...]\n")
				shown++
			}
			break
		}
		body.WriteString(block)
		shown++
	}
	return strings.TrimRight(head(shown)+body.String(), "\n")
}
