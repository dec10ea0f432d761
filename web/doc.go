// Package web holds Drydock's browser UI, embedded in the binary: plain HTML,
// CSS and JavaScript modules with no build step, plus the noVNC library
// (static/novnc, MPL-2.0, see its SOURCE.md) that draws a job's live desktop.
//
// The API server (package api) owns the routes and their access checks; this
// package only serves bytes. Pages go out with a Content-Security-Policy
// that allows nothing but this origin's own scripts and styles, and every
// asset carries a strong ETag so browsers revalidate cheaply after an upgrade.
//
//	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
//		web.ServePage(w, r, web.IndexPage)
//	})
//	mux.HandleFunc("GET /ui/{path...}", func(w http.ResponseWriter, r *http.Request) {
//		web.ServeAsset(w, r, r.PathValue("path"))
//	})
package web
