package daemon_test

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu/sim"
)

// simBinary is npud without cgo (the simulated engine only), built once
// for the tests that run it as a command.
var simBinary daemontest.Binary

// buildBinary returns the npud command, built once; it skips under -short.
func buildBinary(t *testing.T) string {
	t.Helper()
	return simBinary.Path(t)
}

var listeningAddr = regexp.MustCompile(`msg="npud listening" addr=(\S+)`)

// process is a running `npud serve`.
type process struct {
	cmd  *exec.Cmd
	addr string

	mu   sync.Mutex
	logs strings.Builder

	exited  chan struct{} // closed once Wait returned
	waitErr error
}

// startBinary runs `npud serve --listen 127.0.0.1:0 args...` and returns
// once it logged its address.
func startBinary(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	return startBinaryEnv(t, bin, nil, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
}

// startBinaryEnv runs bin with args and extra environment variables, and
// returns once it logged its address.
func startBinaryEnv(t *testing.T, bin string, env []string, args ...string) *process {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &process{cmd: cmd, exited: make(chan struct{})}
	addrc := make(chan string, 1)
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.logs.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if m := listeningAddr.FindStringSubmatch(sc.Text()); m != nil {
				addrc <- m[1]
			}
		}
	}()
	go func() {
		<-logged // Wait closes the pipe: read it to the end first
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	select {
	case p.addr = <-addrc:
	case <-p.exited:
		t.Fatalf("npud exited at start: %v\n%s", p.waitErr, p.log())
	case <-time.After(20 * time.Second):
		t.Fatalf("npud did not start:\n%s", p.log())
	}
	return p
}

func (p *process) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

func (p *process) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig))
}

// wait waits for the process to exit and returns how it exited.
func (p *process) wait(t *testing.T, within time.Duration) *os.ProcessState {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(within):
		t.Fatalf("npud did not exit within %s:\n%s", within, p.log())
	}
	var exitErr *exec.ExitError
	if p.waitErr != nil && !errors.As(p.waitErr, &exitErr) {
		t.Fatalf("waiting for npud: %v", p.waitErr)
	}
	return p.cmd.ProcessState
}

func TestBinarySignals(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the npud binary")
	}
	bin := buildBinary(t)
	newClient := func(t *testing.T) *http.Client {
		transport := &http.Transport{DisableCompression: true}
		t.Cleanup(transport.CloseIdleConnections)
		return &http.Client{Transport: transport, Timeout: 30 * time.Second}
	}

	t.Run("SIGTERM drains a stream and exits 0", func(t *testing.T) {
		p := startBinary(t, bin, "--sim-ttft", "1ms", "--sim-itl", "20ms")
		const prompt = "user: sigterm\n" // 30 of its ≥ 32 tokens: 600 ms
		resp := openStream(t, context.Background(), newClient(t), "http://"+p.addr, chat("sigterm", `"max_tokens":30`))
		defer resp.Body.Close()
		ch := frames(resp.Body)
		before := untilContent(t, ch)

		p.signal(t, syscall.SIGTERM)
		waitFor(t, func() bool { return refused(p.addr) })
		refusedAt := time.Now()

		after := collect(ch)
		require.GreaterOrEqual(t, len(after), 2, "%v", after)
		assert.Equal(t, "data: [DONE]", after[len(after)-1].text)
		assert.Equal(t, "length", finishReason(after[len(after)-2]), "the stream ran to its end during the drain")
		assert.Equal(t, strings.Join(sim.Tokens(0, prompt)[:30], ""), texts(before)+texts(after))
		assert.True(t, after[len(after)-1].at.After(refusedAt), "the stream was still open when the listener closed")

		state := p.wait(t, 20*time.Second)
		logs := p.log()
		assert.Equal(t, 0, state.ExitCode(), "logs:\n%s", logs)
		assert.Contains(t, logs, `msg=draining`)
		assert.Contains(t, logs, `msg=stopped`)
		assert.NotContains(t, logs, "level=ERROR")
	})

	// Issue 12, item 12: the SIGHUP handler used to end with the drain's
	// start, so a SIGHUP during the drain killed the process mid-stream.
	t.Run("SIGHUP during a drain is ignored", func(t *testing.T) {
		p := startBinary(t, bin, "--sim-ttft", "1ms", "--sim-itl", "20ms")
		resp := openStream(t, context.Background(), newClient(t), "http://"+p.addr, chat("hup", `"max_tokens":30`))
		defer resp.Body.Close()
		ch := frames(resp.Body)
		untilContent(t, ch)

		p.signal(t, syscall.SIGTERM)
		waitFor(t, func() bool { return strings.Contains(p.log(), "msg=draining") })
		p.signal(t, syscall.SIGHUP)
		after := collect(ch)
		require.NotEmpty(t, after)
		assert.Equal(t, "data: [DONE]", after[len(after)-1].text, "the stream finished during the drain")
		state := p.wait(t, 20*time.Second)
		assert.Equal(t, 0, state.ExitCode(), "a drained exit, not killed by SIGHUP: %v\n%s", state, p.log())
	})

	t.Run("SIGINT when idle exits 0", func(t *testing.T) {
		p := startBinary(t, bin)
		p.signal(t, os.Interrupt)
		state := p.wait(t, 20*time.Second)
		assert.Equal(t, 0, state.ExitCode(), "logs:\n%s", p.log())
		assert.Contains(t, p.log(), `msg=stopped`)
	})

	t.Run("a second SIGTERM stops at once", func(t *testing.T) {
		// 30 tokens at 500 ms: the drain would take 15 s.
		p := startBinary(t, bin, "--sim-ttft", "1ms", "--sim-itl", "500ms")
		resp := openStream(t, context.Background(), newClient(t), "http://"+p.addr, chat("twice", `"max_tokens":30`))
		defer resp.Body.Close()
		ch := frames(resp.Body)
		untilContent(t, ch)

		p.signal(t, syscall.SIGTERM)
		waitFor(t, func() bool { return strings.Contains(p.log(), "msg=draining") })
		// The first signal un-registers the handler; repeat in case this
		// one comes before that.
		start := time.Now()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
	loop:
		for {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.exited:
				break loop
			case <-tick.C:
			}
			require.Less(t, time.Since(start), 5*time.Second, "npud ignored the second SIGTERM:\n%s", p.log())
		}
		state := p.wait(t, time.Second)
		ws, ok := state.Sys().(syscall.WaitStatus)
		require.True(t, ok)
		assert.True(t, ws.Signaled(), "killed by the signal, not a drained exit: %v", state)
		assert.Equal(t, syscall.SIGTERM, ws.Signal())

		after := collect(ch)
		if len(after) > 0 {
			assert.NotEqual(t, "data: [DONE]", after[len(after)-1].text, "the stream was cut, not finished")
		}
	})
}
