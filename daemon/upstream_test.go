package daemon_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/nputest"
	"github.com/npud/npud/npu/sim"
)

// post posts a JSON body; the response's body closes when the test ends.
//
//bodyclose:handled
func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	return postWith(t, http.DefaultClient, url, body)
}

// postWith posts a JSON body with hc; the response's body closes when the
// test ends.
//
//bodyclose:handled
func postWith(t *testing.T, hc *http.Client, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// Issue 19: a model only the upstream (a second npud) serves goes there, on
// both APIs and through openai-go, with the same text as asking the
// upstream directly; a client's cancel reaches the upstream's engine.
func TestUpstreamRelaysModelsItServes(t *testing.T) {
	backCfg := daemontest.Defaults(t)
	backCfg.Aliases = map[string]string{"big": "sim"}
	backCfg.SimITL = 20 * time.Millisecond
	backEngine := &nputest.RecordingEngine{Engine: sim.New(sim.Config{TTFT: time.Millisecond, ITL: backCfg.SimITL})}
	back := daemontest.Start(t, backCfg, backEngine)
	front := daemontest.StartSim(t, func(c *daemon.Config) {
		c.Upstreams = []string{"back=" + back.URL + ";models=big;timeout=5s"}
	}, nil)

	_, raw := daemontest.NewClient(t, front.URL).Do(t, http.MethodGet, "/v1/models", "")
	assert.Contains(t, string(raw), `"id":"big"`)
	assert.Contains(t, string(raw), `"owned_by":"upstream:back"`)

	body := `{"model":"big","stream":true,"seed":3,"max_tokens":12,"messages":[{"role":"user","content":"hello"}]}`
	direct, _, _ := sse(t, post(t, back.URL+"/v1/chat/completions", body))
	relayed, codes, done := sse(t, post(t, front.URL+"/v1/chat/completions", body))
	assert.True(t, done)
	assert.Empty(t, codes)
	assert.Equal(t, direct, relayed)
	assert.NotEmpty(t, relayed)

	// Ollama's NDJSON on the front, from the upstream's OpenAI stream.
	resp := post(t, front.URL+"/api/chat", `{"model":"big","options":{"seed":3,"num_predict":12},"messages":[{"role":"user","content":"hello"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var ollamaText strings.Builder
	sc := bufio.NewScanner(resp.Body)
	var last map[string]any
	for sc.Scan() {
		require.NoError(t, json.Unmarshal(sc.Bytes(), &last))
		if m, ok := last["message"].(map[string]any); ok {
			ollamaText.WriteString(m["content"].(string))
		}
	}
	assert.Equal(t, direct, ollamaText.String())
	assert.Equal(t, true, last["done"])
	assert.Equal(t, "length", last["done_reason"])

	// openai-go through the front.
	client := openai.NewClient(option.WithBaseURL(front.URL+"/v1/"), option.WithAPIKey("x"), option.WithMaxRetries(0))
	out, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "big", Seed: openai.Int(3), MaxTokens: openai.Int(12),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}})
	require.NoError(t, err)
	assert.Equal(t, direct, out.Choices[0].Message.Content)
	assert.EqualValues(t, 12, out.Usage.CompletionTokens, "the upstream's usage")

	// The Ollama Go client through the front.
	base, err := url.Parse(front.URL)
	require.NoError(t, err)
	var ollamaWhole strings.Builder
	require.NoError(t, api.NewClient(base, http.DefaultClient).Chat(context.Background(), &api.ChatRequest{
		Model: "big", Options: map[string]any{"seed": 3, "num_predict": 12},
		Messages: []api.Message{{Role: "user", Content: "hello"}}}, func(r api.ChatResponse) error {
		ollamaWhole.WriteString(r.Message.Content)
		return nil
	}))
	assert.Equal(t, direct, ollamaWhole.String())

	// Metrics name the upstream as the device; /health lists it.
	_, metrics := daemontest.NewClient(t, front.URL).Do(t, http.MethodGet, "/metrics", "")
	assert.Contains(t, string(metrics), `device="upstream:back"`)
	h := daemontest.Health(t, &http.Client{}, front.URL)
	assert.Equal(t, []any{map[string]any{"name": "back", "healthy": true, "running": 0.0, "queued": 0.0}}, h["upstreams"])

	// A cancel reaches the upstream: the client leaves mid-stream.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, front.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"big","stream":true,"messages":[{"role":"user","content":"a long one"}]}`))
	req.Header.Set("Content-Type", "application/json")
	long, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, err = bufio.NewReader(long.Body).ReadString('\n') // the first event arrived
	require.NoError(t, err)
	cancel()
	_ = long.Body.Close()
	require.Eventually(t, func() bool {
		st := backEngine.Statuses()
		return len(st) > 0 && st[len(st)-1] == npu.Cancel
	}, 10*time.Second, 10*time.Millisecond, "the upstream's engine was cancelled")
	hc := &http.Client{}
	require.Eventually(t, func() bool {
		return daemontest.Health(t, hc, back.URL)["active_streams"] == float64(0)
	}, 10*time.Second, 10*time.Millisecond)
}

// Issue 19: a request for a local model overflows to an upstream serving
// the same model when the local engine cannot take it soon (here: its
// queue is full), and never when it can.
func TestUpstreamOverflow(t *testing.T) {
	backEngine := &nputest.CountingEngine{Engine: sim.New(sim.Config{TTFT: time.Millisecond})}
	back := daemontest.Start(t, daemontest.Defaults(t), backEngine)
	cfg := daemontest.Defaults(t)
	cfg.MaxQueue = 0
	cfg.OverflowAfter = time.Second
	cfg.Upstreams = []string{"back=" + back.URL + ";models=sim"}
	cfg.SimITL = 20 * time.Millisecond
	localEngine := &nputest.CountingEngine{Engine: sim.New(sim.Config{TTFT: time.Millisecond, ITL: cfg.SimITL})}
	front := daemontest.Start(t, cfg, localEngine)

	short := `{"model":"sim","max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`
	resp := post(t, front.URL+"/v1/chat/completions", short)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.EqualValues(t, 1, localEngine.Generations(), "an idle local engine serves its model")
	assert.EqualValues(t, 0, backEngine.Generations(), "no overflow when the wait is short")

	// Occupy the local engine, then ask again: the queue (depth 0) is full.
	busy := post(t, front.URL+"/v1/chat/completions", `{"model":"sim","stream":true,"messages":[{"role":"user","content":"long"}]}`)
	_, err := bufio.NewReader(busy.Body).ReadString('\n')
	require.NoError(t, err)
	resp = post(t, front.URL+"/v1/chat/completions", short)
	raw, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	assert.EqualValues(t, 1, backEngine.Generations(), "the request overflowed upstream")
	assert.EqualValues(t, 2, localEngine.Generations())
}

// fakeUpstream serves /v1/chat/completions with handler and answers
// /v1/models.
func fakeUpstream(t *testing.T, handler http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"far","object":"model"}]}`)
			return
		}
		handler(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func chunkLine(content string) string {
	b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": content}}}})
	return "data: " + string(b) + "\n\n"
}

// Issue 19: nothing an upstream sends breaks npud's framing: a stream cut
// mid-way and a malformed event end in npud's own error event and [DONE]
// (Ollama: an error line); an upstream 400 stays a 400 with its message.
func TestUpstreamMisbehaving(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
	}{
		{"dies mid-stream", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, chunkLine("Hel")+chunkLine("lo"))
			w.(http.Flusher).Flush()
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close() // no [DONE], no chunk terminator
			}
		}},
		{"malformed event", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, chunkLine("Hel")+chunkLine("lo")+"data: {\"choices\": [oops\n\ndata: [DONE]\n\n")
		}},
		{"error event", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, chunkLine("Hel")+chunkLine("lo")+`data: {"error":{"message":"out of memory","type":"server_error"}}`+"\n\ndata: [DONE]\n\n")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := fakeUpstream(t, tc.handler)
			front := daemontest.StartSim(t, func(c *daemon.Config) { c.Upstreams = []string{"far=" + up.URL + ";models=far"} }, nil)
			text, codes, done := sse(t, post(t, front.URL+"/v1/chat/completions",
				`{"model":"far","stream":true,"messages":[{"role":"user","content":"x"}]}`))
			assert.Equal(t, "Hello", text, "what came before the fault was relayed")
			assert.Equal(t, []string{"engine_error"}, codes)
			assert.True(t, done, "npud's terminator follows its error event")

			resp := post(t, front.URL+"/api/chat", `{"model":"far","messages":[{"role":"user","content":"x"}]}`)
			lines, _ := io.ReadAll(resp.Body)
			all := strings.Split(strings.TrimSpace(string(lines)), "\n")
			assert.Contains(t, all[len(all)-1], `"error"`, "Ollama's stream ends with an error line")
		})
	}

	up := fakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"message":"temperature is out of range for this model","type":"invalid_request_error"}}`)
	})
	front := daemontest.StartSim(t, func(c *daemon.Config) { c.Upstreams = []string{"far=" + up.URL + ";models=far"} }, nil)
	resp := post(t, front.URL+"/v1/chat/completions", `{"model":"far","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	raw, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(raw), `upstream \"far\" refused the request (400 Bad Request)`)
	assert.NotContains(t, string(raw), "temperature is out of range", "the upstream's own words go to the log (issue 25)")
}

// Issue 19: an unreachable upstream is a retryable 503 and leaves the
// rotation; its health check brings it back when it answers again.
func TestUpstreamOutOfRotationAndBack(t *testing.T) {
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	front := daemontest.StartSim(t, func(c *daemon.Config) {
		c.Upstreams = []string{fmt.Sprintf("far=http://%s;models=far;health=50ms;timeout=2s", addr)}
	}, nil)
	body := `{"model":"far","messages":[{"role":"user","content":"x"}]}`
	resp := post(t, front.URL+"/v1/chat/completions", body)
	raw, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), "upstream_unavailable")
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	resp = post(t, front.URL+"/v1/chat/completions", body)
	raw, _ = io.ReadAll(resp.Body)
	assert.Contains(t, string(raw), "out of rotation", "a second request does not wait on a dead upstream")

	// The upstream comes back on its address.
	ln, err = (&net.ListenConfig{}).Listen(t.Context(), "tcp", addr)
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			_, _ = io.WriteString(w, `{"data":[]}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, chunkLine("back")+"data: [DONE]\n\n")
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	require.Eventually(t, func() bool {
		resp := post(t, front.URL+"/v1/chat/completions", body)
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK && strings.Contains(string(raw), `"content":"back"`)
	}, 10*time.Second, 50*time.Millisecond)
}

// Issue 19 with issue 16: tools, reasoning and images relayed. The
// upstream npud's structured calls come back as the same calls (ids kept)
// through the front's bridge; the tool's result goes back; images reach
// the upstream's model. Without caps they are refused at the front.
func TestUpstreamRelaysToolsAndImages(t *testing.T) {
	back := daemontest.StartSim(t, nil, nil)
	frontURL := startFront(t, back.URL, "back", "sim", "tools|vision|thinking")

	client := openai.NewClient(option.WithBaseURL(frontURL+"/v1/"), option.WithAPIKey("x"), option.WithMaxRetries(0))
	direct := openai.NewClient(option.WithBaseURL(back.URL+"/v1/"), option.WithAPIKey("x"), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{
		Model: "sim", Seed: openai.Int(5),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("weather in Oslo?")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "get_weather", Parameters: shared.FunctionParameters{"type": "object",
				"properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}})},
	}
	want, err := direct.Chat.Completions.New(context.Background(), params)
	require.NoError(t, err)
	stream := client.Chat.Completions.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	require.NoError(t, stream.Err())
	require.Len(t, acc.Choices[0].Message.ToolCalls, 1)
	got := acc.Choices[0].Message.ToolCalls[0]
	assert.Equal(t, "tool_calls", acc.Choices[0].FinishReason)
	assert.Equal(t, want.Choices[0].Message.ToolCalls[0].Function.Name, got.Function.Name)
	assert.JSONEq(t, want.Choices[0].Message.ToolCalls[0].Function.Arguments, got.Function.Arguments)
	assert.True(t, strings.HasPrefix(got.ID, "call_"), "the upstream's id: %s", got.ID)

	params.Messages = append(params.Messages, acc.Choices[0].Message.ToParam(), openai.ToolMessage("sunny", got.ID))
	answer, err := client.Chat.Completions.New(context.Background(), params)
	require.NoError(t, err, "the tool message reached the upstream with the call it answers")
	assert.Equal(t, "stop", answer.Choices[0].FinishReason)
	assert.NotEmpty(t, answer.Choices[0].Message.Content)

	// An image reaches the upstream's model.
	img := image.NewGray(image.Rect(0, 0, 3, 2))
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	resp := post(t, frontURL+"/api/chat", `{"model":"sim","stream":false,"messages":[{"role":"user","content":"what is it?","images":["`+
		base64.StdEncoding.EncodeToString(b.Bytes())+`"]}]}`)
	raw, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), "I see an image of 3x2 pixels.")

	// Reasoning comes back apart, as from a local model.
	resp = post(t, frontURL+"/api/chat", `{"model":"sim","stream":false,"think":true,"messages":[{"role":"user","content":"think"}]}`)
	var thought struct {
		Message struct{ Content, Thinking string }
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&thought))
	assert.NotEmpty(t, thought.Message.Thinking)
	assert.NotEmpty(t, thought.Message.Content)
	assert.NotContains(t, thought.Message.Content, "think>")

	// Without caps, the front refuses them.
	plainURL := startFront(t, back.URL, "plain", "sim", "")
	resp = post(t, plainURL+"/v1/chat/completions", `{"model":"sim","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}]}`)
	raw, _ = io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(raw), "does not support tools")
}

// renamedEngine serves its engine's one model under another name.
type renamedEngine struct {
	npu.Engine
	id string
}

func (e *renamedEngine) Models() []npu.ModelInfo {
	m := e.Engine.Models()[0]
	m.ID = e.id
	return []npu.ModelInfo{m}
}

// startFront starts an npud whose own model is "local" and which relays
// model to the upstream at url, with caps.
func startFront(t *testing.T, url, name, model, caps string) string {
	t.Helper()
	cfg := daemontest.Defaults(t)
	spec := name + "=" + url + ";models=" + model
	if caps != "" {
		spec += ";caps=" + caps
	}
	cfg.Upstreams = []string{spec}
	return daemontest.Start(t, cfg, &renamedEngine{Engine: sim.New(sim.Config{TTFT: time.Millisecond}), id: "local"}).URL
}
