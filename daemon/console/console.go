// Package console serves npud's web console at /ui/: a status page, a chat
// playground and model management, as static files embedded in the binary.
// The page is a client of the daemon's own APIs (the status route, the
// Ollama API); it holds no secret and reaches nothing but its own origin.
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// Path is where the console is served.
const Path = "/ui/"

//go:embed static
var files embed.FS

// securityHeaders keep the page to its own origin: scripts and styles only
// from the embedded files, fetches only to the daemon, no framing. Model
// output is put in the page as text, so even a renderer bug cannot run a
// script that arrived in an answer.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
	"X-Content-Type-Options": "nosniff",
	"Referrer-Policy":        "no-referrer",
	"Cache-Control":          "no-cache", // a new binary brings a new page
}

// Handler serves the console's files under Path.
func Handler() http.Handler {
	static, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	server := http.StripPrefix(strings.TrimSuffix(Path, "/"), http.FileServerFS(static))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range securityHeaders {
			w.Header().Set(k, v)
		}
		server.ServeHTTP(w, r)
	})
}
