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
	srv, err := New(cfg, NewLogger("json", nil, logs))
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
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+srv.Addr().String()+tc.path, nil)
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

// Issue 12, item 6: a client string (a model name, an error quoting it)
// went into the log whole: 200 KB names made 200 KB log lines. Lines are
// bounded, and control characters stay escaped in them.
func TestClientStringsAreClippedInTheLog(t *testing.T) {
	cfg, err := ParseServe([]string{"--listen", "127.0.0.1:0"}, env(), io.Discard)
	require.NoError(t, err)
	logs := &lockedBuffer{}
	srv, err := New(cfg, slog.New(slog.NewTextHandler(logs, nil)))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	defer func() {
		cancel()
		assert.NoError(t, <-served)
	}()

	model := strings.Repeat("m", 100_000) + "\nlevel=ERROR msg=forged"
	body, err := json.Marshal(map[string]any{"model": model, "prompt": "hi"})
	require.NoError(t, err)
	client := &http.Client{Timeout: 10 * time.Second}
	for _, path := range []string{"/api/generate", "/v1/chat/completions"} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+srv.Addr().String()+path, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("X-Request-ID", "clip-"+strings.Trim(path, "/")[:3])
		resp, err := client.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	require.Eventually(t, func() bool { return strings.Count(logs.String(), "msg=request") == 2 }, 5*time.Second, 5*time.Millisecond)
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		assert.Less(t, len(line), 4096, "a bounded line: %.200s", line)
		assert.False(t, strings.HasPrefix(line, "level=ERROR msg=forged"), "a client cannot start a log line")
	}
	assert.Contains(t, logs.String(), "bytes more")
}
