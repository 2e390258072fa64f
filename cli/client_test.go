package cli_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/cli"
	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/sim"
)

func npud(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = cli.MainIO(t.Context(), args, func(string) string { return "" }, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// Issue 17: the Ollama habits against a running daemon: list, ps, show,
// run (one-shot, from stdin, --verbose), stop, cp, rm.
func TestModelCommands(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	host := "--host=" + srv.URL

	code, out, errOut := npud(t, "", "list", host)
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `NAME\s+SIZE\s+FORMAT\s+MODIFIED`, out)
	assert.Contains(t, out, "sim")

	code, out, errOut = npud(t, "", "run", host, "sim", "hello", "there")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, sim.Text(0, "user: hello there\n")+"\n", out, "the answer, streamed")

	code, out, errOut = npud(t, "a prompt from a pipe\n", "run", host, "--verbose", "sim")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, sim.Text(0, "user: a prompt from a pipe\n")+"\n", out)
	assert.Contains(t, errOut, "eval rate:")
	assert.Contains(t, errOut, "prompt eval count:")

	code, out, errOut = npud(t, "", "ps", host)
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `sim\s+.*simulated\s+32768\s+in `, out, "device, context and keep-alive left")

	code, out, errOut = npud(t, "", "show", host, "sim")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "context length  32768")
	assert.Contains(t, out, "completion")

	code, _, errOut = npud(t, "", "stop", host, "sim")
	require.Equal(t, 0, code, errOut)
	_, out, _ = npud(t, "", "ps", host)
	assert.NotContains(t, out, "sim", "stop unloads the model, not the service")

	code, _, errOut = npud(t, "", "cp", host, "sim", "copy")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "npud cp:", "the simulated engine has no models folder: the daemon's answer, said plainly")

	code, _, errOut = npud(t, "", "run", host, "nope", "hi")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `model "nope"`)

	code, _, errOut = npud(t, "", "list", "--host=127.0.0.1:9")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no npud answers at http://127.0.0.1:9: start it with `npud serve`")

	code, _, errOut = npud(t, "", "show", host)
	assert.Equal(t, 2, code, "show needs a model")
	assert.Contains(t, errOut, "usage: npud show")
	code, out, _ = npud(t, "", "run", "--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "usage: npud run")
}

// Issue 17: the interactive chat, through a real pseudo-terminal: history
// kept, Ctrl-C stops the answer (the engine is cancelled) and the chat
// goes on, /bye ends it.
func TestRunInteractiveThroughAPseudoTerminal(t *testing.T) {
	srv := daemontest.StartSim(t, func(c *daemon.Config) { c.SimITL = 100 * time.Millisecond }, nil)
	long := sim.Tokens(0, "user: short question\nassistant: "+sim.Text(0, "user: short question\n")+"\nuser: a question with a long answer please\n")
	require.Greater(t, len(long), 20, "the answer Ctrl-C stops lasts seconds")
	bin := daemontest.BuildNPUD(t)
	cmd := exec.CommandContext(t.Context(), bin, "run", "--host", srv.URL, "sim")
	tty, seen, waitFor := chatThroughPTY(t, cmd)
	waitFor(">>> ")
	_, err := io.WriteString(tty, "short question\n")
	require.NoError(t, err)
	first := sim.Text(0, "user: short question\n")
	waitFor(first)
	waitFor(">>> ")

	seen.Reset()
	_, err = io.WriteString(tty, "a question with a long answer please\n")
	require.NoError(t, err)
	daemontest.Eventually(t, func() bool { return daemontest.Health(t, http.DefaultClient, srv.URL)["active_streams"] == 1.0 })
	_, err = tty.Write([]byte{3}) // Ctrl-C
	require.NoError(t, err)
	stopped := time.Now()
	waitFor(">>> ")
	require.Eventually(t, func() bool { return daemontest.Health(t, http.DefaultClient, srv.URL)["active_streams"] == 0.0 },
		time.Second, 10*time.Millisecond, "the engine's generation was cancelled, not run to its end")
	assert.Less(t, time.Since(stopped), time.Second)
	assert.True(t, cmd.ProcessState == nil, "Ctrl-C stopped the answer, not the chat")

	_, err = io.WriteString(tty, "/bye\n")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("/bye did not end the chat")
	}
}

// thinker is the simulated model answering like a reasoning model that
// thinks by default (Qwen3): a <think> block, then the answer.
type thinker struct{ *sim.Engine }

func (thinker) Generate(_ context.Context, _ *npu.Request, sink npu.Sink) (npu.Result, error) {
	for _, piece := range []string{"<think>\n", "ponder", "ing", "\n</think>\n\n", "The ", "answer."} {
		if sink(piece) != npu.Running {
			break
		}
	}
	return npu.Result{FinishReason: npu.FinishStop, CompletionTokens: 6}, nil
}

// Issue 16: npud run shows a reasoning model's thinking apart, as Ollama's
// CLI does, and keeps only the answer in the conversation.
func TestRunShowsThinkingApart(t *testing.T) {
	cfg := daemontest.Defaults(t)
	srv := daemontest.Start(t, cfg, thinker{sim.New(sim.Config{})})
	code, out, errOut := npud(t, "", "run", "--host", srv.URL, "sim", "why?")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "Thinking...\npondering\n...done thinking.\n\nThe answer.\n", out)
}

// Issue 27: `npud run --think` (Ollama's CLI has it) asks a reasoning
// model to think; its thinking is shown apart, as without the flag. The
// simulated model thinks only when asked.
func TestRunThink(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	code, out, errOut := npud(t, "", "run", "--host", srv.URL, "sim", "why?")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "Thinking...", "the model's default: no thinking")

	code, out, errOut = npud(t, "", "run", "--host", srv.URL, "--think", "sim", "why?")
	require.Equal(t, 0, code, errOut)
	assert.True(t, strings.HasPrefix(out, "Thinking...\n"), "%q", out)
	assert.Contains(t, out, "\n...done thinking.\n\n")

	code, out, errOut = npud(t, "", "run", "--host", srv.URL, "--think=high", "sim", "why?")
	require.Equal(t, 0, code, errOut)
	assert.True(t, strings.HasPrefix(out, "Thinking...\n"), "%q", out)

	code, out, errOut = npud(t, "", "run", "--host", srv.URL, "--think=false", "sim", "why?")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "Thinking...")

	code, _, errOut = npud(t, "", "run", "--host", srv.URL, "--think=extreme", "sim", "why?")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "want true, false, low, medium or high")

	_, out, _ = npud(t, "", "run", "--help")
	assert.Contains(t, out, "-think")
}

// Issue 27: every command's --help exits 0 and prints its usage (config
// exited 2), and pull's lists --local.
func TestEveryHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{{"config", "--help"}, {"config", "-h"}, {"pull", "--help"}, {"run", "--help"},
		{"list", "--help"}, {"service", "--help"}, {"serve", "--help"}, {"doctor", "--help"}} {
		code, out, errOut := npud(t, "", args...)
		assert.Equal(t, 0, code, "%v: %s", args, errOut)
		assert.Contains(t, strings.ToLower(out+errOut), "usage", "%v", args)
	}
	_, out, _ := npud(t, "", "pull", "--help")
	assert.Contains(t, out, "-local", "pull --help lists --local")
	code, _, errOut := npud(t, "", "pull", "--host", "127.0.0.1:9", "--local", "OpenVINO/x")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--local pulls with no daemon, so it takes no --host")
}

// chatThroughPTY starts cmd on a pseudo-terminal and returns it, what it
// printed since the last seen.Reset, and waitFor, which reads until that
// holds what (20 s at most).
func chatThroughPTY(t *testing.T, cmd *exec.Cmd) (tty *os.File, seen *strings.Builder, waitFor func(what string)) {
	t.Helper()
	tty, err := pty.Start(cmd)
	require.NoError(t, err)
	t.Cleanup(func() { tty.Close() })
	out := make(chan string, 1024)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			if n > 0 {
				out <- string(buf[:n])
			}
			if err != nil {
				close(out)
				return
			}
		}
	}()
	seen = &strings.Builder{}
	waitFor = func(what string) {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for !strings.Contains(seen.String(), what) {
			select {
			case s, ok := <-out:
				if !ok {
					t.Fatalf("the chat ended before %q:\n%s", what, seen.String())
				}
				seen.WriteString(s)
			case <-deadline:
				t.Fatalf("no %q in:\n%s", what, seen.String())
			}
		}
	}
	return tty, seen, waitFor
}
