//go:build cgo

package e2e

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu/hub/hubtest"
)

// Issue 27: on a fresh install (--engine auto, no model yet) the console's
// Pull button got "engine sim serves a fixed set of models". Now the pull
// fills the models folder, the OpenVINO engine (npud's GenAI test library)
// takes over without a restart, and the page shows it: the engine badge,
// the model, and a chat answered by it.
func TestConsolePullOnAFreshInstall(t *testing.T) {
	daemontest.Integration(t, "Chromium")
	lib := daemontest.TestLibrary(t)
	chromiumPath(t)
	t.Setenv("OVTEST_DEVICES", "CPU")
	hub := hubtest.Serve(t, "OpenVINO/tiny-ov", map[string]string{
		"openvino_model.xml":    "<net/>",
		"openvino_model.bin":    "weights",
		"tokenizer_config.json": `{"chat_template": "{% for m in messages %}{{ m.content }}{% endfor %}"}`,
	})
	cfg, err := daemon.ParseServe([]string{"--listen", "127.0.0.1:0", "--engine", "auto", "--openvino-lib", lib,
		"--models-dir", filepath.Join(t.TempDir(), "models"), "--cache-dir", "", "--device", "CPU",
		"--hub-endpoint", hub.URL}, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	srv := daemontest.Start(t, cfg, nil)
	ctx, problems := openConsole(t, srv.URL, nil)

	waitText(t, ctx, "#engine", func(s string) bool { return strings.Contains(s, "SIMULATED") }, "the simulated engine first")
	do(t, ctx,
		chromedp.Click(`button[data-tab="models"]`),
		chromedp.WaitVisible("#pull-name"),
		chromedp.SetValue("#pull-name", "OpenVINO/tiny-ov"),
		chromedp.Click("#pull-start"),
	)
	waitText(t, ctx, "#pull-status", func(s string) bool { return s == "success" }, "the pull")
	waitText(t, ctx, "#models", func(s string) bool { return strings.Contains(s, "tiny-ov") }, "the pulled model")
	assert.Equal(t, 1, eval[int](t, ctx, `document.querySelectorAll("#models button.danger").length`), "a real model can be deleted")
	waitText(t, ctx, "#engine", func(s string) bool { return s == "engine: openvino" }, "the OpenVINO engine, without a restart")
	assert.True(t, eval[bool](t, ctx, `document.getElementById("simulated-banner").hidden`))
	waitText(t, ctx, "#engine-changed", func(s string) bool { return strings.Contains(s, "from sim to openvino") }, "what changed")
	screenshot(t, ctx, "pulled-on-a-fresh-install")

	do(t, ctx,
		chromedp.Click(`button[data-tab="chat"]`),
		chromedp.WaitVisible("#chat-prompt"),
	)
	require.Eventually(t, func() bool { return eval[string](t, ctx, `document.getElementById("chat-model").value`) == "tiny-ov" },
		10*time.Second, 50*time.Millisecond, "the chat offers the pulled model")
	do(t, ctx, chromedp.SetValue("#chat-prompt", "hello"), chromedp.Click("#chat-send"))
	waitState(t, ctx, "done")
	assert.NotEmpty(t, textOf(t, ctx, "#chat-log .msg.assistant"))
	screenshot(t, ctx, "first-answer-from-openvino")
	assert.Empty(t, problems.list(), "the page reported errors")
}
