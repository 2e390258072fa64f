package daemon_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
)

// grayPNG is a w×h PNG of one gray: a few hundred bytes that decode to
// w×h×3 bytes of RGB.
func grayPNG(t *testing.T, w, h int) string {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = 0x80
	}
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

func imageMemory(t *testing.T, base string) float64 {
	t.Helper()
	return scrapeMetrics(t, base).sum("npud_image_memory_bytes")
}

// Issue 38 item 1: every route that decodes images gives their memory
// back when its request ends, however it ends; /v1/messages/count_tokens
// never did. After each request the daemon holds no image memory.
func TestEveryImageRouteGivesItsMemoryBack(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	c := daemontest.NewClient(t, srv.URL)
	data := grayPNG(t, 64, 48)
	url := "data:image/png;base64," + data
	chat := `{"model":"sim","max_tokens":5,%s"messages":[{"role":"user","content":[{"type":"text","text":"what is it?"},{"type":"image_url","image_url":{"url":"` + url + `"}}]}]}`
	anthropic := `{"model":"sim","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + data + `"}},{"type":"text","text":"what is it?"}]}]}`
	for _, tc := range []struct {
		name, path, body string
		status           int
	}{
		{"OpenAI chat", "/v1/chat/completions", strings.Replace(chat, "%s", "", 1), http.StatusOK},
		{"OpenAI chat streamed", "/v1/chat/completions", strings.Replace(chat, "%s", `"stream":true,`, 1), http.StatusOK},
		{"OpenAI chat joined by Idempotency-Key", "/v1/chat/completions", strings.Replace(chat, "%s", "", 1), http.StatusOK},
		{"OpenAI chat refused by the router", "/v1/chat/completions", strings.Replace(strings.Replace(chat, "%s", "", 1), "what is it?", strings.Repeat("word ", 40000), 1), http.StatusBadRequest},
		{"Anthropic messages refused by the router", "/v1/messages", strings.Replace(anthropic, "what is it?", strings.Repeat("word ", 40000), 1), http.StatusBadRequest},
		{"Responses", "/v1/responses", `{"model":"sim","max_output_tokens":5,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"what?"},{"type":"input_image","image_url":"` + url + `"}]}]}`, http.StatusOK},
		{"Ollama chat", "/api/chat", `{"model":"sim","stream":false,"options":{"num_predict":5},"messages":[{"role":"user","content":"what?","images":["` + data + `"]}]}`, http.StatusOK},
		{"Ollama generate", "/api/generate", `{"model":"sim","stream":false,"options":{"num_predict":5},"prompt":"what?","images":["` + data + `"]}`, http.StatusOK},
		{"Anthropic messages", "/v1/messages", anthropic, http.StatusOK},
		{"Anthropic count_tokens", "/v1/messages/count_tokens", anthropic, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var header []string
			if strings.Contains(tc.name, "Idempotency") {
				header = []string{"Idempotency-Key", "img-" + strings.ReplaceAll(t.Name(), "/", "-")}
			}
			resp, raw := c.Do(t, http.MethodPost, tc.path, tc.body, header...)
			require.Equal(t, tc.status, resp.StatusCode, "%.400s", raw)
			if header != nil {
				resp, raw = c.Do(t, http.MethodPost, tc.path, tc.body, header...) // joins the first
				require.Equal(t, tc.status, resp.StatusCode, "%.400s", raw)
			}
			assert.Zero(t, imageMemory(t, srv.URL), "the image memory went back")
		})
	}

	ws := strings.Replace(srv.URL, "http://", "ws://", 1)
	t.Run("npud WebSocket", func(t *testing.T) {
		start := `{"type":"start","request_id":"img1","max_tokens":5,` + strings.TrimPrefix(strings.Replace(chat, "%s", "", 1), "{")
		wsTurn(t, ws+"/npud/v1/streams", start, []string{"final"}, []string{"error"})
		assert.Zero(t, imageMemory(t, srv.URL))
	})
	t.Run("Responses WebSocket", func(t *testing.T) {
		create := `{"type":"response.create","model":"sim","max_output_tokens":5,"input":[{"type":"message","role":"user","content":[{"type":"input_image","image_url":"` + url + `"}]}]}`
		wsTurn(t, ws+"/v1/responses", create, []string{"response.completed", "response.incomplete"}, []string{"error", "response.failed"})
		assert.Zero(t, imageMemory(t, srv.URL))
	})
}

// wsTurn sends msg on a new WebSocket to url and reads until a message of
// one of the end types, failing on one of the failure types.
func wsTurn(t *testing.T, url, msg string, end, failure []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, url, nil)
	require.NoError(t, err)
	defer conn.CloseNow()
	require.NoError(t, conn.Write(ctx, websocket.MessageText, []byte(msg)))
	for {
		_, raw, err := conn.Read(ctx)
		require.NoError(t, err)
		var m struct{ Type string }
		require.NoError(t, json.Unmarshal(raw, &m))
		require.NotContains(t, failure, m.Type, "%s", raw)
		if slices.Contains(end, m.Type) {
			return
		}
	}
}

// Issue 38 item 1: count_tokens held each image's decoded memory for the
// life of the process, so a few requests with large images made every
// image request on every API a 529. It counts images by their headers:
// many count_tokens with large images leave the budget whole, and a
// request that decodes one still gets the memory.
func TestCountTokensDoesNotExhaustTheImageMemory(t *testing.T) {
	srv := daemontest.StartSim(t, func(c *daemon.Config) {
		c.MaxImageMemory, c.MaxRequestImageMemory = 16<<20, 16<<20 // four 1000×1000 pictures
	}, nil)
	c := daemontest.NewClient(t, srv.URL)
	data := grayPNG(t, 1000, 1000)
	body := `{"model":"sim","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + data + `"}},{"type":"text","text":"hi"}]}]}`
	var counted int
	for i := range 12 {
		resp, raw := c.Do(t, http.MethodPost, "/v1/messages/count_tokens", body)
		require.Equal(t, http.StatusOK, resp.StatusCode, "count %d: %s", i, raw)
		var n struct {
			InputTokens int `json:"input_tokens"`
		}
		require.NoError(t, json.Unmarshal(raw, &n))
		counted = n.InputTokens
	}
	assert.Zero(t, imageMemory(t, srv.URL))
	resp, raw := c.Do(t, http.MethodPost, "/v1/messages", body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	var m struct {
		Usage struct {
			InputTokens int `json:"input_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.Unmarshal(raw, &m))
	assert.Equal(t, m.Usage.InputTokens, counted, "the image counted as the message reads it (the simulated model: by its size)")
}
