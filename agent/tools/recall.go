package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode"

	"github.com/drydockhq/drydock/llm"
)

var recallDef = llm.Tool{
	Name:        NameRecall,
	Description: `Search everything that happened in this job so far: your earlier messages, tool calls and their full outputs, errors and notes, including parts no longer shown in the conversation. Returns the best-matching entries with excerpts. Use distinctive words (file names, error messages, function names).`,
	InputSchema: schema(`{"type":"object","properties":{
"query":{"type":"string","description":"Words to look for."}},
"required":["query"]}`),
}

// Recall limits.
const (
	recallHits    = 5
	recallExcerpt = 1200
)

type recall struct{ env *Env }

func (r *recall) run(_ context.Context, input json.RawMessage) Result {
	var in struct {
		Query string `json:"query"`
	}
	if err := decode(input, &in); err != nil {
		return errorf("recall: %v", err)
	}
	terms := tokenize(in.Query)
	if len(terms) == 0 {
		return errorf("recall: query is required (words to look for)")
	}
	docs := r.env.History()
	hits := Search(docs, terms, recallHits)
	if len(hits) == 0 {
		return Result{Output: fmt.Sprintf("Nothing in the job's history (%d entries) matches %q.", len(docs), in.Query)}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d of %d entries match %q, best first:\n", len(hits), len(docs), in.Query)
	for _, h := range hits {
		d := docs[h]
		fmt.Fprintf(&sb, "\n--- %s ---\n%s\n", d.Label, excerpt(d.Text, terms, recallExcerpt))
	}
	return Result{Output: strings.TrimRight(sb.String(), "\n")}
}

// Search ranks docs against the query terms with Okapi BM25 (k1 1.2, b
// 0.75) and returns the indexes of the best n that match at all.
func Search(docs []Doc, terms []string, n int) []int {
	const k1, b = 1.2, 0.75
	tfs := make([]map[string]int, len(docs))
	lens := make([]int, len(docs))
	df := map[string]int{}
	total := 0
	for i, d := range docs {
		toks := tokenize(d.Label + " " + d.Text)
		tf := map[string]int{}
		for _, t := range toks {
			tf[t]++
		}
		for t := range tf {
			df[t]++
		}
		tfs[i], lens[i] = tf, len(toks)
		total += len(toks)
	}
	if len(docs) == 0 {
		return nil
	}
	avg := float64(total) / float64(len(docs))
	type scored struct {
		i     int
		score float64
	}
	var ranked []scored
	for i := range docs {
		score := 0.0
		for _, t := range terms {
			f := float64(tfs[i][t])
			if f == 0 {
				continue
			}
			idf := math.Log(1 + (float64(len(docs))-float64(df[t])+0.5)/(float64(df[t])+0.5))
			score += idf * f * (k1 + 1) / (f + k1*(1-b+b*float64(lens[i])/avg))
		}
		if score > 0 {
			ranked = append(ranked, scored{i, score})
		}
	}
	// Later entries win ties: they are closer to the present state.
	sort.SliceStable(ranked, func(x, y int) bool {
		if ranked[x].score != ranked[y].score {
			return ranked[x].score > ranked[y].score
		}
		return ranked[x].i > ranked[y].i
	})
	var out []int
	for _, r := range ranked[:min(n, len(ranked))] {
		out = append(out, r.i)
	}
	return out
}

// tokenize lowercases s and splits it into words of letters and digits;
// identifiers split at underscores and dots as well, since queries name
// their parts.
func tokenize(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// excerpt returns up to n bytes of text around the first line that holds a
// query term.
func excerpt(text string, terms []string, n int) string {
	if len(text) <= n {
		return text
	}
	lower := strings.ToLower(text)
	at := -1
	for _, t := range terms {
		if k := strings.Index(lower, t); k >= 0 && (at < 0 || k < at) {
			at = k
		}
	}
	start := 0
	if at > n/3 {
		start = at - n/3
		if nl := strings.LastIndexByte(text[:at], '\n'); nl >= start-n/3 && nl >= 0 {
			start = nl + 1
		}
	}
	end := min(start+n, len(text))
	out := text[start:end]
	if start > 0 {
		out = "..." + out
	}
	if end < len(text) {
		out += "..."
	}
	return out
}
