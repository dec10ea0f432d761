package api

import (
	"bytes"
	"context"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/drydockhq/drydock"
)

// The server's boundary against browsers. A web page the user visits can
// make the browser send requests to the API (forms, fetch without CORS), and
// a page on a name the attacker controls can point that name at 127.0.0.1
// (DNS rebinding) and read the answers as its own origin. On a loopback
// server in development mode no token stands in the way, so both would act
// as the local admin. admit refuses them before any route runs:
//
//   - on a loopback server, a Host that is not a loopback name or address,
//     nor the host of PublicURL or LiveURL (rebinding);
//   - a state-changing request (or a WebSocket upgrade) from an Origin that
//     is not one of the server's own, or that the browser marks cross-site;
//   - a path that is not clean, which the mux would answer with a redirect.
//
// Request bodies are checked per route (handleBodies): only JSON, so that
// no body a form can send without a CORS preflight reaches a handler.

type hostKey struct{}

// acceptedHost is the Host the boundary accepted for this request; links
// in answers are built from it (or from PublicURL), never from a Host that
// no check saw.
func acceptedHost(ctx context.Context) string {
	h, _ := ctx.Value(hostKey{}).(string)
	return h
}

// admit checks a request at the boundary, before any route, and returns
// it carrying the Host it accepted.
func (s *Server) admit(r *http.Request) (*http.Request, error) {
	if err := uncleanPath(r); err != nil {
		return nil, err
	}
	host := r.Host
	if s.cfg.DevMode && !s.servesHost(host) {
		s.log.Warn("refused a request for a foreign host name (DNS rebinding?)", "host", host, "method", r.Method, "path", r.URL.Path)
		return nil, drydock.Errorf(drydock.EMISDIRECTED, "this server listens on loopback and answers only requests for localhost or a loopback address, not for host %q; to reach it under another name, start it with --public-url (or --live-url) naming that host", host)
	}
	if host == "" {
		// HTTP/1.0 without a Host: links name the address the request came
		// in on.
		if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			host = a.String()
		}
	}
	if err := s.checkOrigin(r); err != nil {
		s.log.Warn("refused a cross-site request", "origin", r.Header.Get("Origin"), "sec_fetch_site", r.Header.Get("Sec-Fetch-Site"), "method", r.Method, "path", r.URL.Path)
		return nil, err
	}
	return r.WithContext(context.WithValue(r.Context(), hostKey{}, host)), nil
}

// uncleanPath refuses a path with empty, "." or ".." segments, as sent or
// once decoded, in JSON: the mux would answer the first with an HTML
// redirect to another route, and a decoded one ("..%2f") reaches handlers
// that must then each refuse it.
func uncleanPath(r *http.Request) error {
	if r.Method == http.MethodConnect || r.URL.Path == "*" {
		return nil // the mux answers these itself
	}
	for _, p := range []string{r.URL.EscapedPath(), r.URL.Path} {
		if c := cleanPath(p); c != p {
			return drydock.Errorf(drydock.EINVALID, "the path %q has empty, '.' or '..' segments (once decoded); send it without them, as in %q", p, c)
		}
	}
	return nil
}

// cleanPath is the mux's canonical form of a path: path.Clean keeping a
// trailing slash.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// servesHost reports whether a loopback server answers requests for host (a
// Host header, port optional): loopback names and addresses, whose owner is
// this machine, and the hosts of the configured public and live URLs.
func (s *Server) servesHost(host string) bool {
	name := hostName(host)
	if name == "" {
		return false
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	if a, err := netip.ParseAddr(name); err == nil {
		return a.Unmap().IsLoopback()
	}
	for _, u := range []string{s.cfg.PublicURL, s.cfg.LiveURL} {
		if pu, err := url.Parse(u); err == nil && pu.Host != "" && hostName(pu.Host) == name {
			return true
		}
	}
	return false
}

// hostName is the lower-case name or address of a host[:port], without
// brackets or a trailing dot.
func hostName(host string) string {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		name = host[1 : len(host)-1]
	}
	return strings.TrimSuffix(strings.ToLower(name), ".")
}

// safeMethod reports whether a method changes nothing by HTTP's rules and
// by this server's routes.
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// checkOrigin refuses a state-changing request, or a WebSocket upgrade, that
// a browser sent from a page of another origin. Requests without Origin
// (curl, the CLI, the SDK) pass: only browsers add it, and they always do
// on these requests.
func (s *Server) checkOrigin(r *http.Request) error {
	upgrade := r.Header.Get("Upgrade") != ""
	if safeMethod(r.Method) && !upgrade {
		return nil
	}
	// The live origin may differ from the UI's by more than a port, which
	// a browser reports as cross-site for the UI's desktop WebSocket; the
	// Origin check below decides those.
	if !upgrade && strings.EqualFold(r.Header.Get("Sec-Fetch-Site"), "cross-site") {
		return drydock.Errorf(drydock.EFORBIDDEN, "refused a cross-site request: a page of another site cannot change anything here (Sec-Fetch-Site: cross-site)")
	}
	origin := r.Header.Values("Origin")
	switch {
	case len(origin) == 0:
		return nil
	case len(origin) == 1 && s.ownOrigin(origin[0], r):
		return nil
	}
	return drydock.Errorf(drydock.EFORBIDDEN, "refused a cross-origin request from %q: only this server's own pages may change anything here (open the web UI at the server's address, or send the request without an Origin header)", strings.Join(origin, ", "))
}

// ownOrigin reports whether origin is the request host's own, PublicURL's
// or LiveURL's.
func (s *Server) ownOrigin(origin string, r *http.Request) bool {
	o, err := url.Parse(origin)
	if err != nil || (o.Scheme != "http" && o.Scheme != "https") || o.Host == "" || o.User != nil || (o.Path != "" && o.Path != "/") {
		return false // "null" (sandboxed frames, file:) among others
	}
	for _, u := range []string{s.cfg.PublicURL, s.cfg.LiveURL} {
		if c, err := url.Parse(u); err == nil && c.Host != "" && strings.EqualFold(c.Scheme, o.Scheme) && hostPort(c) == hostPort(o) {
			return true
		}
	}
	// Behind a proxy that terminates TLS the browser's scheme is not the
	// one this server sees, so the request's own host is compared by name
	// and port only: a page on another scheme of the same host is served by
	// whoever serves this one.
	name, port := hostName(r.Host), ""
	if _, p, err := net.SplitHostPort(r.Host); err == nil {
		port = p
	}
	if name == "" || hostName(o.Host) != name {
		return false
	}
	if port == "" {
		return o.Port() == ""
	}
	return hostPort(o) == name+":"+port
}

// hostPort is u's lower-case host with its port, the scheme's default
// filled in.
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if strings.EqualFold(u.Scheme, "https") {
			port = "443"
		}
	}
	return hostName(u.Host) + ":" + port
}

// Media types of request bodies.
const (
	mediaJSON      = "application/json"
	mediaMultipart = "multipart/form-data"
)

// jsonBodies is what the API's routes take unless they say otherwise.
var jsonBodies = []string{mediaJSON}

// handleBodies registers a route whose request bodies must be of one of the
// media types; a request without a body passes. An upload route opts in
// with []string{mediaJSON, mediaMultipart}. nil takes any body unseen: for
// proxies to a sandbox's own server, whose pages send what they like (the
// Origin check still applies).
func (s *Server) handleBodies(pattern string, media []string, h http.Handler) {
	if media != nil {
		h = s.checkBody(media, h)
	}
	method, p, _ := cutSpace(pattern)
	s.routes = append(s.routes, route{method, p})
	s.mux.Handle(pattern, h)
}

// checkBody answers 415 to a request whose body is not of the media types:
// the types a form or a fetch without a CORS preflight can send
// (text/plain, application/x-www-form-urlencoded, multipart/form-data)
// never reach a JSON handler.
func (s *Server) checkBody(media []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hasBody(r) {
			if err := bodyType(r.Header.Get("Content-Type"), media); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// bodyType checks a Content-Type against the media types a route takes.
// JSON must be UTF-8 (RFC 8259), so a charset other than that is refused.
func bodyType(ct string, media []string) error {
	want := strings.Join(media, " or ")
	if ct == "" {
		return drydock.Errorf(drydock.EUNSUPPORTEDMEDIA, "the request has a body but no Content-Type; send 'Content-Type: %s' (curl: -H 'Content-Type: application/json', or --json)", want)
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || !slices.Contains(media, mt) {
		return drydock.Errorf(drydock.EUNSUPPORTEDMEDIA, "Content-Type %q is not accepted here; send %s (curl: -H 'Content-Type: application/json', or --json)", ct, want)
	}
	if cs, ok := params["charset"]; ok && mt == mediaJSON && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
		return drydock.Errorf(drydock.EUNSUPPORTEDMEDIA, "charset %q is not accepted: JSON bodies are UTF-8", cs)
	}
	return nil
}

// hasBody reports whether the request carries at least one byte of body.
// A body of unknown length (chunked) is peeked at, and the byte put back.
func hasBody(r *http.Request) bool {
	switch {
	case r.ContentLength > 0:
		return true
	case r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody:
		return false
	}
	var one [1]byte
	n, _ := io.ReadFull(r.Body, one[:])
	if n == 0 {
		return false
	}
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(one[:n]), r.Body), r.Body}
	return true
}
