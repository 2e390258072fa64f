//go:build cgo

package daemon_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
)

// startOpenVINO serves `--engine openvino` on one model folder, against
// npud's GenAI test library (tokens every 2 ms).
func startOpenVINO(t *testing.T) *daemontest.Server {
	t.Helper()
	models := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(models, "tiny"), 0o755))
	daemontest.WriteOpenVINOModel(t, models, "tiny")
	t.Setenv("OVTEST_DEVICES", "CPU,GPU")
	t.Setenv("OVTEST_TOKEN_DELAY_US", "2000")
	cfg := daemontest.Defaults(t)
	cfg.Engine, cfg.ModelsDir, cfg.Device, cfg.CacheDir = "openvino", models, "AUTO", ""
	cfg.OpenVINOLib = daemontest.TestLibrary(t)
	return daemontest.Start(t, cfg, nil)
}

// The official clients against the OpenVINO engine: what the simulated
// engine's suite shows, through the real cgo binding.
func TestOpenVINOWithTheOfficialClients(t *testing.T) {
	srv := startOpenVINO(t)
	ctx := t.Context()
	oc := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("unused"))
	params := openai.ChatCompletionNewParams{Model: "tiny", MaxTokens: openai.Int(12), Seed: openai.Int(5),
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("hello")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}}

	stream := oc.Chat.Completions.NewStreaming(ctx, params)
	var streamed strings.Builder
	var finish string
	var completion int64
	for stream.Next() {
		ch := stream.Current()
		if len(ch.Choices) > 0 {
			streamed.WriteString(ch.Choices[0].Delta.Content)
			if ch.Choices[0].FinishReason != "" {
				finish = ch.Choices[0].FinishReason
			}
		}
		if ch.Usage.CompletionTokens > 0 {
			completion = ch.Usage.CompletionTokens
		}
	}
	require.NoError(t, stream.Err())
	assert.NotEmpty(t, streamed.String())
	assert.Equal(t, "length", finish)
	assert.EqualValues(t, 12, completion)

	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{}
	whole, err := oc.Chat.Completions.New(ctx, params)
	require.NoError(t, err)
	assert.Equal(t, streamed.String(), whole.Choices[0].Message.Content, "streamed and whole agree (same seed)")

	// A stop string: the text ends before it, and it never appears.
	words := strings.Fields(streamed.String())
	require.GreaterOrEqual(t, len(words), 3)
	stop := " " + words[2]
	params.Stop = openai.ChatCompletionNewParamsStopUnion{OfString: openai.String(stop)}
	stopped, err := oc.Chat.Completions.New(ctx, params)
	require.NoError(t, err)
	assert.Equal(t, "stop", string(stopped.Choices[0].FinishReason))
	assert.NotContains(t, stopped.Choices[0].Message.Content, stop)
	assert.True(t, strings.HasPrefix(streamed.String(), stopped.Choices[0].Message.Content))

	// Errors in OpenAI's shape.
	_, err = oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "nope",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}})
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusNotFound, apiErr.StatusCode)

	// The Ollama Go client: generate and chat, streamed.
	base, err := url.Parse(srv.URL)
	require.NoError(t, err)
	ol := api.NewClient(base, http.DefaultClient)
	var gen strings.Builder
	var last api.GenerateResponse
	require.NoError(t, ol.Generate(ctx, &api.GenerateRequest{Model: "tiny", Prompt: "hello", Options: map[string]any{"num_predict": 6}},
		func(r api.GenerateResponse) error { gen.WriteString(r.Response); last = r; return nil }))
	assert.True(t, last.Done)
	assert.Equal(t, "length", last.DoneReason)
	assert.Equal(t, 6, last.EvalCount)
	assert.NotEmpty(t, gen.String())
	var chat strings.Builder
	require.NoError(t, ol.Chat(ctx, &api.ChatRequest{Model: "tiny", Messages: []api.Message{{Role: "user", Content: "hi"}},
		Options: map[string]any{"num_predict": 4}}, func(r api.ChatResponse) error { chat.WriteString(r.Message.Content); return nil }))
	assert.NotEmpty(t, chat.String())
}

// A client that leaves mid-stream frees the engine (GenAI hears CANCEL at
// its next callback), and the next request runs.
func TestOpenVINOClientDisconnect(t *testing.T) {
	srv := startOpenVINO(t)
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"tiny","stream":true,"max_tokens":5000,"messages":[{"role":"user","content":"long"}]}`))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, err = resp.Body.Read(make([]byte, 256))
	require.NoError(t, err)
	cancel()
	resp.Body.Close()
	daemontest.Eventually(t, func() bool { return daemontest.Health(t, http.DefaultClient, srv.URL)["active_streams"] == 0.0 })
	resp2, raw := daemontest.NewClient(t, srv.URL).Do(t, http.MethodPost, "/v1/chat/completions",
		`{"model":"tiny","max_tokens":3,"messages":[{"role":"user","content":"again"}]}`)
	assert.Equal(t, http.StatusOK, resp2.StatusCode, "%s", raw)
}

// Resumable SSE and the WebSocket endpoint over the OpenVINO engine.
func TestOpenVINOResumeAndRealtime(t *testing.T) {
	srv := startOpenVINO(t)
	body := `{"model":"tiny","stream":true,"resumable":true,"max_tokens":20,"messages":[{"role":"user","content":"resume"}]}`
	c := daemontest.NewClient(t, srv.URL)
	_, whole := c.Do(t, http.MethodPost, "/v1/chat/completions", body, "Idempotency-Key", "ov-resume")
	require.Contains(t, string(whole), "data: [DONE]")
	// Join the finished stream from event 3: the same events, from there.
	_, rest := c.Do(t, http.MethodPost, "/v1/chat/completions", body, "Idempotency-Key", "ov-resume", "Last-Event-ID", "2")
	assert.True(t, strings.HasSuffix(string(whole), string(rest)), "a resume replays the tail:\n%s\n---\n%s", whole, rest)
	assert.NotContains(t, string(rest), `"role"`)

	wctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(wctx, strings.Replace(srv.URL, "http", "ws", 1)+"/npud/v1/streams", nil)
	require.NoError(t, err)
	defer conn.CloseNow()
	require.NoError(t, conn.Write(wctx, websocket.MessageText,
		[]byte(`{"type":"start","request_id":"ws1","model":"tiny","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`)))
	for {
		_, data, err := conn.Read(wctx)
		require.NoError(t, err)
		if strings.Contains(string(data), `"type":"final"`) {
			assert.Contains(t, string(data), `"finish_reason":"length"`)
			assert.Contains(t, string(data), `"completion_tokens":5`)
			break
		}
		require.NotContains(t, string(data), `"type":"error"`)
	}
	conn.Close(websocket.StatusNormalClosure, "")
}
