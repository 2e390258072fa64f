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

// Revision is the commit the served repository's main branch resolves to.
const Revision = "0123456789abcdef0123456789abcdef01234567"

// Serve serves repo ("owner/name") with files (path → content) until the
// test ends: main resolved at /api/models/REPO/revision/main, the listing
// at /api/models/REPO/tree/REVISION and each file at
// /REPO/resolve/REVISION/PATH.
func Serve(t testing.TB, repo string, files map[string]string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/models/" + repo + "/revision/main":
			_ = json.NewEncoder(w).Encode(map[string]string{"id": repo, "sha": Revision})
			return
		case "/api/models/" + repo + "/tree/" + Revision:
			list := []map[string]any{}
			for p, b := range files {
				list = append(list, map[string]any{"type": "file", "path": p, "size": len(b)})
			}
			_ = json.NewEncoder(w).Encode(list)
			return
		}
		if b, ok := files[strings.TrimPrefix(r.URL.Path, "/"+repo+"/resolve/"+Revision+"/")]; ok {
			_, _ = io.WriteString(w, b)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}
