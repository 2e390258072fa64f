//go:build cgo

package daemon_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/cli"
	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu/hub/hubtest"
)

// Issue 27: on a fresh install --engine auto serves the simulated engine,
// and `npud pull` was refused (501, "engine sim serves a fixed set of
// models"). Now the pull goes into the models folder whatever engine
// serves, and the first model it brings starts the OpenVINO engine: a
// streamed answer from it follows, without a restart, and the log,
// /health and /metrics say what changed.
func TestAutoServesOpenVINOAfterTheFirstPull(t *testing.T) {
	lib := daemontest.TestLibrary(t)
	t.Setenv("OVTEST_DEVICES", "CPU")
	hub := hubtest.Serve(t, "OpenVINO/tiny-ov", map[string]string{
		"openvino_model.xml":    "<net/>",
		"openvino_model.bin":    "weights",
		"tokenizer_config.json": `{"chat_template": "{% for m in messages %}{{ m.content }}{% endfor %}"}`,
	})
	models := filepath.Join(t.TempDir(), "models") // a fresh install: not made yet
	cfg, err := daemon.ParseServe([]string{"--listen", "127.0.0.1:0", "--engine", "auto", "--openvino-lib", lib,
		"--models-dir", models, "--cache-dir", "", "--device", "CPU", "--hub-endpoint", hub.URL,
		"--sim-ttft", "1ms", "--sim-itl", "1ms"}, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	logs := &syncBuffer{}
	srv, err := daemon.New(cfg, slog.New(slog.NewJSONHandler(logs, nil)))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-served)
	}()
	base := "http://" + srv.Addr().String()
	hc := &http.Client{}

	h := daemontest.Health(t, hc, base)
	require.Equal(t, true, h["simulated"], "no model yet: %v", h)
	assert.Contains(t, h["simulated_why"], "holds no model")
	assert.Nil(t, h["engine_changed"])

	// `npud pull`, the command the start-up log suggests, through the
	// daemon's /api/pull.
	var stdout, stderr bytes.Buffer
	code := cli.Main(t.Context(), []string{"pull", "--host", srv.Addr().String(), "OpenVINO/tiny-ov"},
		func(string) string { return "" }, &stdout, &stderr)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	assert.Contains(t, stdout.String(), "success")

	h = daemontest.Health(t, hc, base)
	assert.Equal(t, "openvino", h["engine"])
	assert.Equal(t, false, h["simulated"])
	assert.Nil(t, h["simulated_why"])
	changed, _ := h["engine_changed"].(map[string]any)
	require.NotNil(t, changed, "/health says what changed: %v", h)
	assert.Equal(t, "sim", changed["from"])
	assert.Equal(t, "openvino", changed["to"])
	assert.Contains(t, changed["reason"], "tiny-ov")
	require.Len(t, h["models"], 1)
	assert.Equal(t, "tiny-ov", h["models"].([]any)[0].(map[string]any)["id"])

	oc := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("unused"))
	stream := oc.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{
		Model: "tiny-ov", MaxTokens: openai.Int(6),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}})
	var text strings.Builder
	var finish string
	for stream.Next() {
		for _, c := range stream.Current().Choices {
			text.WriteString(c.Delta.Content)
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
		}
	}
	require.NoError(t, stream.Err())
	assert.NotEmpty(t, text.String())
	assert.Equal(t, "length", finish)

	resp, err := hc.Get(base + "/api/ps")
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(raw), `"device":"CPU"`, "the answer came from the OpenVINO engine on the test library")

	resp, err = hc.Get(base + "/metrics")
	require.NoError(t, err)
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(raw), `engine="openvino"`)

	var logged bool
	for _, l := range logs.lines() {
		if strings.HasPrefix(l["msg"].(string), "engine changed") {
			logged = true
			assert.Equal(t, "sim", l["from"])
			assert.Equal(t, "openvino", l["to"])
		}
	}
	assert.True(t, logged, "the log says what changed")
}
