package memory

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// BM25 parameters: the usual ones.
const (
	k1 = 1.2
	b  = 0.75
)

// PassageBytes is the most a passage holds, unless one line alone is longer
// than half of it (then the line is cut).
const PassageBytes = 1000

// Hit is a passage that matched a query.
type Hit struct {
	Label string // where it comes from, e.g. "step 12, bash result, lines 40-52"
	Text  string
	Score float64
}

// Index is a BM25 index of passages. It is safe for concurrent use.
type Index struct {
	mu       sync.RWMutex
	passages []passage
	postings map[string][]posting
	df       map[string]int
	keys     map[string][]int // key -> its passages
	live     int              // passages not removed
	total    int              // tokens of live passages
}

type passage struct {
	label string
	text  string
	len   int
	dead  bool
}

type posting struct {
	p  int
	tf int
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{postings: map[string][]posting{}, df: map[string]int{}, keys: map[string][]int{}}
}

// Add indexes text under key, labelled label; a text under the same key is
// replaced. A text longer than a passage is split at line boundaries and
// each passage's label says which lines it holds.
func (ix *Index) Add(key, label, text string) {
	parts := split(text)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.remove(key)
	var ids []int
	for _, pt := range parts {
		l := label
		if len(parts) > 1 {
			if pt.first == pt.last {
				l += ", line " + strconv.Itoa(pt.first)
			} else {
				l += ", lines " + strconv.Itoa(pt.first) + "-" + strconv.Itoa(pt.last)
			}
		}
		id := len(ix.passages)
		tf := map[string]int{}
		n := 0
		for _, t := range Terms(l + "\n" + pt.text) {
			tf[t]++
			n++
		}
		for t, f := range tf {
			ix.postings[t] = append(ix.postings[t], posting{id, f})
			ix.df[t]++
		}
		ix.passages = append(ix.passages, passage{label: l, text: pt.text, len: n})
		ix.live++
		ix.total += n
		ids = append(ids, id)
	}
	ix.keys[key] = ids
}

// Has reports whether a text is indexed under key.
func (ix *Index) Has(key string) bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	_, ok := ix.keys[key]
	return ok
}

// Len is the number of passages indexed.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.live
}

// remove drops key's passages: they stay in the postings, marked dead, and
// leave the statistics.
func (ix *Index) remove(key string) {
	for _, id := range ix.keys[key] {
		p := &ix.passages[id]
		seen := map[string]bool{}
		for _, t := range Terms(p.label + "\n" + p.text) {
			if !seen[t] {
				seen[t] = true
				ix.df[t]--
			}
		}
		p.dead = true
		ix.live--
		ix.total -= p.len
	}
	delete(ix.keys, key)
}

// Search returns the best n passages for the query, best first; passages
// that hold none of its terms are left out. Later passages win ties: they
// are closer to the present state of the work.
func (ix *Index) Search(query string, n int) []Hit {
	terms := unique(Terms(query))
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.live == 0 || len(terms) == 0 || n <= 0 {
		return nil
	}
	avg := float64(ix.total) / float64(ix.live)
	scores := map[int]float64{}
	for _, t := range terms {
		df := ix.df[t]
		if df <= 0 {
			continue
		}
		idf := math.Log(1 + (float64(ix.live)-float64(df)+0.5)/(float64(df)+0.5))
		for _, po := range ix.postings[t] {
			p := ix.passages[po.p]
			if p.dead {
				continue
			}
			f := float64(po.tf)
			scores[po.p] += idf * f * (k1 + 1) / (f + k1*(1-b+b*float64(p.len)/avg))
		}
	}
	ids := make([]int, 0, len(scores))
	for id := range scores {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(x, y int) bool {
		if sx, sy := scores[ids[x]], scores[ids[y]]; sx != sy {
			return sx > sy
		}
		return ids[x] > ids[y]
	})
	hits := make([]Hit, 0, min(n, len(ids)))
	for _, id := range ids[:min(n, len(ids))] {
		p := ix.passages[id]
		hits = append(hits, Hit{Label: p.label, Text: p.text, Score: scores[id]})
	}
	return hits
}

// Terms lowercases s and splits it into words of letters and digits, so an
// identifier's parts (snake_case, dotted.names, paths) are words of their
// own.
func Terms(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

func unique(ts []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range ts {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

type part struct {
	text        string
	first, last int // 1-based line numbers
}

// split cuts text into passages of whole lines of at most PassageBytes; a
// line longer than that is cut into passages of its own.
func split(text string) []part {
	text = strings.TrimRight(text, "\n")
	lines := strings.Split(text, "\n")
	if len(text) <= PassageBytes {
		return []part{{text: text, first: 1, last: len(lines)}}
	}
	var parts []part
	var cur []string
	size, first := 0, 1
	flush := func(last int) {
		if len(cur) > 0 {
			parts = append(parts, part{text: strings.Join(cur, "\n"), first: first, last: last})
		}
		cur, size, first = nil, 0, last+1
	}
	for i, l := range lines {
		n := i + 1
		for len(l) > PassageBytes {
			flush(n - 1)
			cut := PassageBytes
			for cut > 0 && !utf8.RuneStart(l[cut]) {
				cut--
			}
			parts = append(parts, part{text: l[:cut], first: n, last: n})
			l = l[cut:]
		}
		if size > 0 && size+len(l)+1 > PassageBytes {
			flush(n - 1)
		}
		cur = append(cur, l)
		size += len(l) + 1
	}
	flush(len(lines))
	return parts
}
