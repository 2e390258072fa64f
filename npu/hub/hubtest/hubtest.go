// Package hubtest serves one model repository the way a Hugging Face-
// compatible hub does, on loopback, for tests of pulling.
package hubtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Serve serves repo ("owner/name") with files (path → content) until the
// test ends: the listing at /api/models/REPO/tree/main and each file at
// /REPO/resolve/main/PATH.
func Serve(t testing.TB, repo string, files map[string]string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/models/"+repo+"/tree/main" {
			list := []map[string]any{}
			for p, b := range files {
				list = append(list, map[string]any{"type": "file", "path": p, "size": len(b)})
			}
			_ = json.NewEncoder(w).Encode(list)
			return
		}
		if b, ok := files[strings.TrimPrefix(r.URL.Path, "/"+repo+"/resolve/main/")]; ok {
			_, _ = io.WriteString(w, b)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}
