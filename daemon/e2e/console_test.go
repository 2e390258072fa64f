package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/nputest"
	"github.com/npud/npud/npu/sim"
)

// chromiumPath finds Debian's Chromium. It skips when it is missing,
// except in CI, where `make test` installs it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed (make test installs it)")
	}
	t.Skip("chromium is not installed: apt-get install chromium")
	return ""
}

// pageProblems collects what the page reported as wrong: exceptions,
// console.error calls and error entries of the browser log (a failed fetch
// among them).
type pageProblems struct {
	mu   sync.Mutex
	seen []string
}

func (p *pageProblems) add(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, s)
}

func (p *pageProblems) list() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

// openConsole starts a headless Chromium on the console of base. Browser
// log entries from a source ignoreLogSource accepts are expected ones.
func openConsole(t *testing.T, base string, ignoreLogSource func(string) bool) (context.Context, *pageProblems) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox, chromedp.DisableGPU,
		// This machine's network is closed: no background connections.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1200, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	problems := &pageProblems{}
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			switch {
			case m.IsException():
				problems.add("exception: " + m.String())
			case m.Type == chromedp.ConsoleType("error") && (m.Source == "" || ignoreLogSource == nil || !ignoreLogSource(m.Source)):
				problems.add(fmt.Sprintf("error (%s): %s %s", m.Source, m.Text, m.URL))
			}
		}
	}()
	t.Cleanup(func() { cancelCtx(); cancelAlloc(); <-done })
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/ui/")))
	return ctx, problems
}

// do runs actions on the page.
func do(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, actions...))
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	require.NoError(t, err, js)
	return v
}

// textOf is the text of the first element sel matches, "" when none does.
func textOf(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return eval[string](t, ctx, fmt.Sprintf(`document.querySelector(%q)?.textContent ?? ""`, sel))
}

// screenshot writes the page to the test's artifact folder (kept with
// `go test -artifacts`).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	path := filepath.Join(t.ArtifactDir(), name+".png")
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot: %s", path)
}

// waitText waits until the element's text satisfies ok.
func waitText(t *testing.T, ctx context.Context, sel string, ok func(string) bool, what string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var text string
	for time.Now().Before(deadline) {
		if text = textOf(t, ctx, sel); ok(text) {
			return text
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: %s still reads %q", what, sel, text)
	return ""
}

// waitState waits for the chat answer's data-state.
func waitState(t *testing.T, ctx context.Context, want string) {
	t.Helper()
	require.Eventually(t, func() bool {
		return eval[string](t, ctx, `document.querySelector("#chat-log .msg.assistant")?.dataset.state ?? ""`) == want
	}, 20*time.Second, 50*time.Millisecond, "the answer is %s", want)
}

// longPrompt is a prompt the simulated engine answers at length, so a
// stream lasts while the test looks at it.
func longPrompt(t *testing.T) string {
	t.Helper()
	for i := range 200 {
		p := fmt.Sprintf("tell me a long story number %d", i)
		if len(sim.Tokens(0, "user: "+p+"\n")) >= 40 {
			return p
		}
	}
	t.Fatal("no prompt with a long simulated answer")
	return ""
}

// htmlEngine answers a prompt that asks for it with Markdown and markup
// that must stay text in the page.
type htmlEngine struct{ *nputest.RecordingEngine }

const hostileAnswer = "# Title\n\nSome **bold** and `code` <img src=x onerror=\"window.pwned=1\"><script>window.pwned=2</script>\n\n" +
	"- [a link](javascript:window.pwned=3)\n- [safe](https://example.com)\n\n```\n<b>not bold</b>\n```\n"

func (e htmlEngine) Generate(ctx context.Context, req *npu.Request, sink npu.Sink) (npu.Result, error) {
	if !strings.Contains(sim.PromptText(req), "show me markup") {
		return e.RecordingEngine.Generate(ctx, req, sink)
	}
	for _, piece := range strings.SplitAfter(hostileAnswer, " ") {
		if st := sink(piece); st != npu.Running {
			return npu.Result{FinishReason: npu.FinishCancelled}, nil
		}
	}
	return npu.Result{FinishReason: npu.FinishStop, PromptTokens: 5, CompletionTokens: strings.Count(hostileAnswer, " ") + 1}, nil
}

// Issue 17: the console shows the engine loudly, reflects a running
// stream, streams a chat answer, cancels it with the stop button (the
// engine sees Cancel) and renders Markdown without running markup from
// the answer; the page reports no error.
func TestConsoleStatusChatAndStop(t *testing.T) {
	daemontest.Integration(t, "Chromium")
	cfg := daemontest.Defaults(t)
	cfg.SimITL = 60 * time.Millisecond
	recording := &nputest.RecordingEngine{Engine: sim.New(sim.Config{TTFT: time.Millisecond, ITL: cfg.SimITL})}
	srv := daemontest.Start(t, cfg, htmlEngine{recording})
	ctx, problems := openConsole(t, srv.URL, nil)

	waitText(t, ctx, "#engine", func(s string) bool { return strings.Contains(s, "SIMULATED") }, "the engine badge")
	assert.False(t, eval[bool](t, ctx, `document.getElementById("simulated-banner").hidden`), "the simulated engine is said loudly")

	// A stream from another client shows up in the status.
	prompt := longPrompt(t)
	streamCtx, stopStream := context.WithCancel(t.Context())
	defer stopStream()
	go func() {
		req, _ := http.NewRequestWithContext(streamCtx, http.MethodPost, srv.URL+"/api/chat",
			strings.NewReader(`{"model":"sim","messages":[{"role":"user","content":"`+prompt+`"}]}`))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body) // connected until the test stops it
			_ = resp.Body.Close()
		}
	}()
	waitText(t, ctx, "#active-streams", func(s string) bool { return s == "1" }, "the running stream")
	waitText(t, ctx, "#loaded", func(s string) bool { return strings.Contains(s, "sim") }, "the loaded model")
	screenshot(t, ctx, "status-with-stream")
	stopStream()
	waitText(t, ctx, "#active-streams", func(s string) bool { return s == "0" }, "the stream's end")

	// The chat: an answer streams in and the stop button cancels it.
	do(t, ctx,
		chromedp.Click(`button[data-tab="chat"]`),
		chromedp.WaitVisible("#chat-prompt"),
		chromedp.SetValue("#chat-prompt", prompt),
		chromedp.Click("#chat-send"),
	)
	waitText(t, ctx, "#chat-log .msg.assistant", func(s string) bool { return len(strings.Fields(s)) >= 3 }, "the streamed answer")
	before := len(recording.Statuses())
	do(t, ctx, chromedp.Click("#chat-stop"))
	waitState(t, ctx, "stopped")
	require.Eventually(t, func() bool {
		return len(recording.Statuses()) > before && recording.Statuses()[len(recording.Statuses())-1] == npu.Cancel
	}, 10*time.Second, 20*time.Millisecond, "the engine saw Cancel")
	full := sim.Text(0, "user: "+prompt+"\n")
	shown := textOf(t, ctx, "#chat-log .msg.assistant")
	assert.Less(t, len(shown), len(full), "the answer was cut, not run to its end")
	screenshot(t, ctx, "chat-stopped")

	// Markdown renders; markup in the answer stays text.
	do(t, ctx,
		chromedp.Click("#chat-clear"),
		chromedp.SetValue("#chat-prompt", "show me markup"),
		chromedp.Click("#chat-send"),
	)
	waitState(t, ctx, "done")
	type markup struct {
		Pwned   any    `json:"pwned"`
		Imgs    int    `json:"imgs"`
		Scripts int    `json:"scripts"`
		Strong  string `json:"strong"`
		Heading string `json:"heading"`
		Pre     string `json:"pre"`
		Links   []string
	}
	dom := eval[markup](t, ctx, `(() => {
		const m = document.querySelector("#chat-log .msg.assistant");
		return {pwned: window.pwned ?? null, imgs: m.querySelectorAll("img").length,
			scripts: m.querySelectorAll("script").length, strong: m.querySelector("strong")?.textContent,
			heading: m.querySelector("h3")?.textContent, pre: m.querySelector("pre")?.textContent,
			Links: [...m.querySelectorAll("a")].map(a => a.href)};
	})()`)
	assert.Nil(t, dom.Pwned, "no script from the answer ran")
	assert.Zero(t, dom.Imgs)
	assert.Zero(t, dom.Scripts)
	assert.Equal(t, "bold", dom.Strong)
	assert.Equal(t, "Title", dom.Heading)
	assert.Equal(t, "<b>not bold</b>", dom.Pre)
	assert.Equal(t, []string{"https://example.com/"}, dom.Links, "a javascript: link is not a link")
	assert.Contains(t, textOf(t, ctx, "#chat-timings"), "TTFT")
	screenshot(t, ctx, "chat-markdown")

	// Think: the reasoning is shown apart, folded, never in the answer.
	do(t, ctx,
		chromedp.Click("#chat-clear"),
		chromedp.Click("#chat-think"),
		chromedp.SetValue("#chat-prompt", "think first"),
		chromedp.Click("#chat-send"),
	)
	waitState(t, ctx, "done")
	thinking := textOf(t, ctx, "#chat-log .msg.assistant details.thinking p")
	assert.NotEmpty(t, thinking, "the reasoning is shown")
	assert.NotContains(t, textOf(t, ctx, "#chat-log .msg.assistant"), "think>")
	do(t, ctx, chromedp.Click("#chat-think"))

	// A whole answer: tokens and rate from the server's final chunk.
	do(t, ctx,
		chromedp.Click("#chat-clear"),
		chromedp.SetValue("#chat-prompt", "hi"),
		chromedp.Click("#chat-send"),
	)
	waitText(t, ctx, "#chat-timings", func(s string) bool { return strings.Contains(s, "tok/s") }, "the timings")
	assert.Empty(t, problems.list(), "the page reported errors")
}

// pullEngine is the simulated engine with a registry whose pulls report
// byte progress in steps the test releases.
type pullEngine struct {
	*sim.Engine
	step chan struct{}
}

func (e pullEngine) Pull(ctx context.Context, name string, progress func(npu.PullProgress)) error {
	progress(npu.PullProgress{Status: "pulling manifest"})
	const total = 10 << 20
	for done := int64(0); done <= total; done += total / 10 {
		select {
		case <-e.step:
		case <-ctx.Done():
			return ctx.Err()
		}
		progress(npu.PullProgress{Status: "downloading openvino_model.bin", Digest: "openvino_model.bin", Total: total, Completed: done})
	}
	progress(npu.PullProgress{Status: "success"})
	return nil
}

func (e pullEngine) Delete(context.Context, string) error       { return npu.ErrNotSupported }
func (e pullEngine) Copy(context.Context, string, string) error { return npu.ErrNotSupported }

// Issue 17: a pull started in the console shows its bytes moving.
func TestConsolePullProgress(t *testing.T) {
	daemontest.Integration(t, "Chromium")
	cfg := daemontest.Defaults(t)
	engine := pullEngine{Engine: sim.New(sim.Config{TTFT: time.Millisecond, ITL: time.Millisecond}), step: make(chan struct{})}
	srv := daemontest.Start(t, cfg, engine)
	ctx, problems := openConsole(t, srv.URL, nil)
	do(t, ctx,
		chromedp.Click(`button[data-tab="models"]`),
		chromedp.WaitVisible("#pull-name"),
		chromedp.SetValue("#pull-name", "OpenVINO/tiny-ov"),
		chromedp.Click("#pull-start"),
	)
	progressValue := func() float64 {
		return eval[float64](t, ctx, `document.getElementById("pull-progress").value / document.getElementById("pull-progress").max`)
	}
	last := -1.0
	for i := range 11 {
		engine.step <- struct{}{}
		require.Eventually(t, func() bool { return progressValue() > last }, 10*time.Second, 20*time.Millisecond, "step %d moved the bar", i)
		last = progressValue()
		if i == 5 {
			screenshot(t, ctx, "pull-progress")
			waitText(t, ctx, "#pull-status", func(s string) bool { return strings.Contains(s, "MiB / 10.0 MiB") }, "the bytes")
		}
	}
	waitText(t, ctx, "#pull-status", func(s string) bool { return s == "success" }, "the pull's end")
	assert.Empty(t, problems.list(), "the page reported errors")
}

// Issue 17: with keys configured the page asks for one, keeps it in the
// tab's session only, and then shows the status.
func TestConsoleAsksForAnAPIKey(t *testing.T) {
	daemontest.Integration(t, "Chromium")
	srv := daemontest.StartSim(t, func(c *daemon.Config) {
		c.APIKeys = []daemon.APIKey{{Name: "alice", Key: "alice-key-0123456789abcdef"}}
	}, nil)
	// The status call before a key is given answers 401, which Chromium
	// logs as a failed resource: expected here.
	ctx, problems := openConsole(t, srv.URL, func(source string) bool { return source == "network" })
	do(t, ctx,
		chromedp.WaitVisible("#key-form"),
		chromedp.SetValue("#key-input", "alice-key-0123456789abcdef"),
		chromedp.Click(`#key-form button[type="submit"]`),
	)
	waitText(t, ctx, "#engine", func(s string) bool { return strings.Contains(s, "sim") }, "the status after the key")
	type storage struct {
		Session string `json:"session"`
		Local   int    `json:"local"`
	}
	stored := eval[storage](t, ctx, `({session: sessionStorage.getItem("npud-api-key"), local: localStorage.length})`)
	assert.Equal(t, "alice-key-0123456789abcdef", stored.Session)
	assert.Zero(t, stored.Local, "the key is never kept beyond the tab")
	assert.True(t, eval[bool](t, ctx, `document.getElementById("key-form").hidden`))
	assert.Empty(t, problems.list(), "the page reported errors")
}

// Issue 27: the charts started empty unless the page was open, the TTFT
// chart was a dash after six requests (one point per interval, isolated
// points never drawn), lines hugged the top and ran under the "max" label,
// a failed pull's banner followed the user to the Status tab, and the
// simulated model had a Delete button that cannot work. The charts now
// draw the daemon's own record of the last requests, one point each, on an
// axis with room above the highest point and its labels in a margin.
func TestConsoleChartsAndModelsTab(t *testing.T) {
	daemontest.Integration(t, "Chromium")
	srv := daemontest.StartSim(t, nil, nil)
	for i := range 6 {
		resp, err := daemontest.Post(t.Context(), nil, srv.URL+"/api/generate", "application/json",
			strings.NewReader(fmt.Sprintf(`{"model":"sim","prompt":"question %d","stream":false,"options":{"num_predict":%d}}`, i, 3+2*i)))
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	ctx, problems := openConsole(t, srv.URL, func(source string) bool { return source == "network" })

	type drawn struct {
		Points     string `json:"points"`
		AxisTop    string `json:"axisTop"`
		PlotTop    string `json:"plotTop"`
		HighestY   string `json:"highestY"`
		LabelRight string `json:"labelRight"`
		PlotLeft   string `json:"plotLeft"`
	}
	for _, name := range []string{"ttft", "itl", "tps"} {
		sel := "#chart-" + name
		require.Eventually(t, func() bool {
			return eval[string](t, ctx, fmt.Sprintf(`document.querySelector(%q).dataset.points ?? ""`, sel)) == "6"
		}, 20*time.Second, 50*time.Millisecond, "%s: six requests made before the page opened, six points", name)
		d := eval[drawn](t, ctx, fmt.Sprintf(`({...document.querySelector(%q).dataset})`, sel))
		var highestY, plotTop, labelRight, plotLeft float64
		_, _ = fmt.Sscan(d.HighestY, &highestY)
		_, _ = fmt.Sscan(d.PlotTop, &plotTop)
		_, _ = fmt.Sscan(d.LabelRight, &labelRight)
		_, _ = fmt.Sscan(d.PlotLeft, &plotLeft)
		assert.GreaterOrEqual(t, highestY-plotTop, 5.0, "%s: the highest point stays below the top of the axis", name)
		assert.Less(t, labelRight, plotLeft, "%s: the axis labels are left of the plot, never over a line", name)
		assert.Contains(t, textOf(t, ctx, "#last-"+name), "max", name)
	}
	screenshot(t, ctx, "charts-from-history")

	do(t, ctx, chromedp.Click(`button[data-tab="models"]`), chromedp.WaitVisible("#pull-name"))
	waitText(t, ctx, "#models", func(s string) bool { return strings.Contains(s, "sim") }, "the model list")
	assert.Zero(t, eval[int](t, ctx, `document.querySelectorAll("#models button.danger").length`),
		"the simulated model cannot be deleted, so it has no Delete button")

	// This engine takes no pulls: the failure is said in the pull form,
	// and not on the other tabs.
	do(t, ctx, chromedp.SetValue("#pull-name", "OpenVINO/tiny-ov"), chromedp.Click("#pull-start"))
	waitText(t, ctx, "#pull-status", func(s string) bool { return strings.HasPrefix(s, "failed:") }, "the failed pull")
	screenshot(t, ctx, "pull-failed")
	do(t, ctx, chromedp.Click(`button[data-tab="status"]`))
	assert.True(t, eval[bool](t, ctx, `document.getElementById("error").hidden`), "no pull error on the Status tab")
	screenshot(t, ctx, "status-after-failed-pull")
	assert.Empty(t, problems.list(), "the page reported errors")
}
