package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu/sim"
	"github.com/npud/npud/wire/audioin/wavtest"
)

// Issue 30: the console's transcription panel uploads a file and shows
// the text as it streams in, a window at a time (the engine is held
// before the second window until the page shows the first), subtitles
// whole, and a file npud cannot decode as the server's own 400.
func TestConsoleTranscribes(t *testing.T) {
	daemontest.SimOnly(t, "the simulated engine's transcriber")
	cfg := daemontest.Defaults(t)
	hold := make(chan struct{})
	srv := daemontest.Start(t, cfg, sim.New(sim.Config{HearWindow: func(ctx context.Context, window int) error {
		if window == 1 {
			select {
			case <-hold:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}}))
	dir := t.TempDir()
	long, short, text := filepath.Join(dir, "long.wav"), filepath.Join(dir, "short.wav"), filepath.Join(dir, "notes.txt")
	tone := func(seconds float64, rate int) []byte {
		x := wavtest.Tone(440, 0.5, seconds, rate)
		return wavtest.Encode([][]float64{x, x}, rate, wavtest.PCM16)
	}
	require.NoError(t, os.WriteFile(long, tone(65, 16000), 0o600))
	require.NoError(t, os.WriteFile(short, tone(2, 44100), 0o600))
	require.NoError(t, os.WriteFile(text, []byte("not audio at all"), 0o600))

	ctx, problems := openConsole(t, srv.URL, func(source string) bool { return source == "network" })
	do(t, ctx,
		chromedp.Click(`button[data-tab="transcribe"]`),
		chromedp.WaitVisible("#stt-file"),
	)
	waitText(t, ctx, "#stt-model", func(s string) bool { return s == "sim" }, "the speech models")

	do(t, ctx, chromedp.SetUploadFiles("#stt-file", []string{long}), chromedp.Click("#stt-send"))
	waitText(t, ctx, "#stt-text", func(s string) bool { return strings.HasPrefix(s, "30.00 seconds, level 0.35") }, "the first window")
	assert.Equal(t, "running", eval[string](t, ctx, `document.getElementById("stt-text").dataset.state`))
	assert.NotContains(t, textOf(t, ctx, "#stt-text"), "5.00 seconds", "the rest is not heard yet")
	screenshot(t, ctx, "transcribing")
	close(hold)
	got := waitText(t, ctx, "#stt-text", func(s string) bool { return strings.Contains(s, "5.00 seconds") }, "the whole transcript")
	assert.Regexp(t, `^30.00 seconds, level 0.35\d, pitch 440 Hz\. 30.00 seconds, level 0.35\d, pitch 440 Hz\. 5.00 seconds, level 0.35\d, pitch 440 Hz\.$`, got)
	waitText(t, ctx, "#stt-info", func(s string) bool { return strings.Contains(s, "65 s of audio, done in") }, "the summary")

	do(t, ctx,
		chromedp.SetValue("#stt-format", "srt"),
		chromedp.SetUploadFiles("#stt-file", []string{short}),
		chromedp.Click("#stt-send"),
	)
	waitText(t, ctx, "#stt-text", func(s string) bool { return strings.HasPrefix(s, "1\n00:00:00,000 --> 00:00:02,000\n2.00 seconds") }, "the subtitles")

	do(t, ctx, chromedp.SetUploadFiles("#stt-file", []string{text}), chromedp.Click("#stt-send"))
	waitText(t, ctx, "#error", func(s string) bool {
		return strings.Contains(s, "npud cannot decode this file (not a format npud recognises): it decodes WAV")
	}, "the refusal")
	assert.Equal(t, "failed", eval[string](t, ctx, `document.getElementById("stt-text").dataset.state`))
	assert.Empty(t, problems.list(), "the page reported errors")
}
