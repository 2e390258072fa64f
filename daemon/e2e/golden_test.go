package e2e

import (
	"context"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata/golden")

// varying are the parts of a transcript that change from run to run
// (clocks and durations); they are replaced before the comparison.
var varying = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`"created":\d+`), `"created":0`},
	{regexp.MustCompile(`"created_at":"[^"]*"`), `"created_at":"T"`},
	{regexp.MustCompile(`"(total|load|prompt_eval|eval)_duration":\d+`), `"${1}_duration":0`},
	{regexp.MustCompile(`"(queue|load|prefill|decode)_ms":\d+`), `"${1}_ms":0`},
}

func normalise(s string) string {
	for _, v := range varying {
		s = v.re.ReplaceAllString(s, v.with)
	}
	return s
}

// golden compares a transcript with testdata/golden/NAME (go test -update
// rewrites it), so that a change to a protocol's framing shows as a diff.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	got = normalise(got)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "no golden transcript: run go test ./daemon/e2e/ -run Golden -update")
	assert.Equal(t, string(want), got, "the %s framing changed; if that is intended, rerun with -update and review the diff", name)
}

// The streams of each protocol, byte for byte, for one deterministic
// simulated generation (issue 13: golden transcripts).
func TestGoldenTranscripts(t *testing.T) {
	// Tokens 25 ms apart: a reader that is never 25 ms late gets one chunk per
	// token, so the transcript does not depend on the machine's load.
	srv := daemontest.StartSim(t, func(c *daemon.Config) { c.Heartbeat, c.SimITL = 0, 25*time.Millisecond }, nil)
	post := func(path, body string) string {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Request-ID", "golden-1")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.Status + "\n" + resp.Header.Get("Content-Type") + "\n\n" + string(raw)
	}
	const msgs = `"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"golden"}]`
	golden(t, "openai-chat.sse", post("/v1/chat/completions", `{"model":"sim","stream":true,"seed":7,"max_tokens":12,"stream_options":{"include_usage":true},`+msgs+`}`))
	golden(t, "openai-chat.json", post("/v1/chat/completions", `{"model":"sim","seed":7,"max_tokens":12,`+msgs+`}`))
	golden(t, "openai-completions.sse", post("/v1/completions", `{"model":"sim","stream":true,"seed":7,"max_tokens":12,"prompt":"golden"}`))
	golden(t, "ollama-chat.ndjson", post("/api/chat", `{"model":"sim","options":{"seed":7,"num_predict":12},`+msgs+`}`))
	golden(t, "ollama-generate.ndjson", post("/api/generate", `{"model":"sim","options":{"seed":7,"num_predict":12},"prompt":"golden"}`))
	golden(t, "openai-error.json", post("/v1/chat/completions", `{"model":"nope",`+msgs+`}`))
	golden(t, "ollama-error.json", post("/api/chat", `{"model":"nope",`+msgs+`}`))

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, strings.Replace(srv.URL, "http://", "ws://", 1)+"/npud/v1/streams", nil)
	require.NoError(t, err)
	defer conn.CloseNow()
	require.NoError(t, conn.Write(ctx, websocket.MessageText,
		[]byte(`{"type":"start","request_id":"golden-ws","model":"sim","seed":7,"max_tokens":12,`+msgs+`}`)))
	var ws strings.Builder
	for {
		_, data, err := conn.Read(ctx)
		require.NoError(t, err)
		ws.Write(data)
		ws.WriteByte('\n')
		if strings.Contains(string(data), `"type":"final"`) || strings.Contains(string(data), `"type":"error"`) {
			break
		}
	}
	golden(t, "websocket.jsonl", ws.String())
}
