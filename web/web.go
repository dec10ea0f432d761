package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"
)

// Pages served as documents.
const (
	IndexPage   = "index.html"   // jobs list, new task, job page (a client-side router picks)
	DesktopPage = "desktop.html" // a job's desktop alone, opened through a signed link
)

//go:embed static
var static embed.FS

type asset struct {
	data  []byte
	etag  string
	ctype string
}

var assets = load()

func load() map[string]*asset {
	m := map[string]*asset{}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		ctype := mime.TypeByExtension(path.Ext(p))
		if ctype == "" {
			ctype = http.DetectContentType(data)
		}
		if path.Ext(p) == ".md" {
			ctype = "text/plain; charset=utf-8"
		}
		m[strings.TrimPrefix(p, "static/")] = &asset{data: data, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, ctype: ctype}
		return nil
	})
	if err != nil {
		panic("web: read embedded files: " + err.Error()) // the embed is fixed at build time
	}
	return m
}

// Has reports whether name is an embedded asset.
func Has(name string) bool { _, ok := assets[name]; return ok }

// ServeAsset answers with the embedded file name (relative to static/, e.g.
// "app.js" or "novnc/core/rfb.js"), or 404.
func ServeAsset(w http.ResponseWriter, r *http.Request, name string) {
	a, ok := assets[name]
	if !ok || strings.HasSuffix(name, ".html") {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	serve(w, r, a)
}

// ServePage answers with one of the pages. connectSrc lists other origins
// the page may open connections to (the live origin of desktops, when it is
// not this one).
func ServePage(w http.ResponseWriter, r *http.Request, page string, connectSrc ...string) {
	a, ok := assets[page]
	if !ok {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	h := w.Header()
	h.Set("Content-Security-Policy", PageCSP(connectSrc...))
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	serve(w, r, a)
}

// PageCSP is the policy of the UI's pages: only this origin's own scripts,
// styles and connections (plus connectSrc), no inline code, no framing.
func PageCSP(connectSrc ...string) string {
	connect := "'self'"
	for _, c := range connectSrc {
		for _, o := range strings.Fields(c) {
			if isOrigin(o) {
				connect += " " + o
			}
		}
	}
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; font-src 'self'; " +
		"connect-src " + connect + "; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
}

// isOrigin accepts scheme://host[:port] for the schemes a page connects
// with, and nothing that could widen the policy otherwise.
func isOrigin(o string) bool {
	u, err := url.Parse(o)
	if err != nil || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return false
	}
	switch u.Scheme {
	case "http", "https", "ws", "wss":
	default:
		return false
	}
	return !strings.ContainsAny(u.Host, "*;'\" ")
}

func serve(w http.ResponseWriter, r *http.Request, a *asset) {
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("ETag", a.etag)
	// Revalidate every time: the ETag makes that a 304, and a new binary's
	// files are never mixed with an old cached module graph.
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.data))
}
