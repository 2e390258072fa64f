package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestPanicIsAnsweredAndLogged: a handler that panics gets a 500 in the
// API's error shape, the connection survives, and the request still has
// its access-log line, with status 500 and the panic as its error.
func TestPanicIsAnsweredAndLogged(t *testing.T) {
	cfg, err := ParseServe([]string{"--listen", "127.0.0.1:0"}, env(), io.Discard)
	require.NoError(t, err)
	logs := &lockedBuffer{}
	srv, err := New(cfg, slog.New(slog.NewJSONHandler(logs, nil)))
	require.NoError(t, err)
	// No real route panics; add one to the real router and middleware.
	router := srv.http.Handler.(*gin.Engine)
	router.GET("/v1/boom", func(*gin.Context) { panic("kaboom") })
	router.GET("/api/boom", func(*gin.Context) { panic("kaboom") })

	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	transport := &http.Transport{}
	client := &http.Client{Transport: transport, Timeout: 10 * time.Second}
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-served)
		transport.CloseIdleConnections()
	})

	tests := []struct {
		path, id string
		bodyHas  string
	}{
		{"/v1/boom", "panic-openai", `"code":"internal_error"`},
		{"/api/boom", "panic-ollama", `{"error":"internal error: kaboom"}`},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, "http://"+srv.Addr().String()+tc.path, nil)
			require.NoError(t, err)
			req.Header.Set("X-Request-ID", tc.id)
			resp, err := client.Do(req)
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
			assert.Equal(t, tc.id, resp.Header.Get("X-Request-ID"))
			assert.Contains(t, string(body), tc.bodyHas)

			var line map[string]any
			require.Eventually(t, func() bool {
				for _, l := range strings.Split(logs.String(), "\n") {
					var m map[string]any
					if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "request" && m["request_id"] == tc.id {
						line = m
						return true
					}
				}
				return false
			}, 5*time.Second, 5*time.Millisecond, "no access-log line for the request that panicked:\n%s", logs.String())
			assert.Equal(t, float64(500), line["status"])
			assert.Equal(t, tc.path, line["route"])
			assert.Equal(t, "WARN", line["level"])
			assert.Contains(t, line["error"], "kaboom")
		})
	}
}
