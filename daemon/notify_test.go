package daemon_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
)

// The binary under a Type=notify unit: the test plays systemd's part with
// its own notify socket.
func TestSystemdNotifyReadyWatchdogStopping(t *testing.T) {
	bin := buildBinary(t)
	sock := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	require.NoError(t, err)
	defer conn.Close()
	messages := make(chan string, 100)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(messages)
				return
			}
			messages <- string(buf[:n])
		}
	}()
	next := func(what string) string {
		t.Helper()
		select {
		case m := <-messages:
			return m
		case <-time.After(20 * time.Second):
			t.Fatalf("no %s message from npud", what)
			return ""
		}
	}
	p := startBinaryEnv(t, bin, []string{"NOTIFY_SOCKET=" + sock, "WATCHDOG_USEC=400000"},
		"serve", "--listen", "127.0.0.1:0", "--preload", "sim", "--sim-ttft", "1ms")
	assert.Equal(t, "STATUS=preloading sim", next("STATUS"))
	assert.Equal(t, "EXTEND_TIMEOUT_USEC=60000000", next("EXTEND_TIMEOUT_USEC"), "a slow compile asks for more start time")
	ready := next("READY")
	assert.Contains(t, ready, "READY=1")
	assert.Contains(t, ready, "STATUS=serving on "+p.addr)
	// Once READY is sent the listener answers and the preloaded model is
	// in memory already.
	resp, raw := daemontest.NewClient(t, "http://"+p.addr).Do(t, "GET", "/api/ps", "")
	assert.Equal(t, 200, resp.StatusCode)
	assert.Contains(t, string(raw), `"name":"sim"`, "READY comes after the preloads")

	for range 3 {
		assert.Equal(t, "WATCHDOG=1", next("WATCHDOG"), "pings at half of WATCHDOG_USEC")
	}
	p.signal(t, syscall.SIGTERM)
	for {
		m := next("STOPPING")
		if m == "WATCHDOG=1" {
			continue // one may have been in flight
		}
		assert.Contains(t, m, "STOPPING=1")
		break
	}
	st := p.wait(t, 30*time.Second)
	assert.Equal(t, 0, st.ExitCode())
}

// npud.socket: systemd passes the listening socket; npud serves on it and
// ignores --listen. systemd-socket-activate plays systemd here.
func TestSocketActivation(t *testing.T) {
	activate, err := exec.LookPath("systemd-socket-activate")
	if err != nil {
		requireTool(t, "systemd-socket-activate (Debian package systemd)")
	}
	bin := buildBinary(t)
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close() // systemd-socket-activate binds it again
	// Like systemd, the activator starts npud at the first connection; that
	// connection waits in the socket's backlog and is served, not lost.
	first := make(chan int, 1)
	go func() {
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			resp, err := daemontest.Get(t.Context(), nil, "http://"+addr+"/health")
			if err == nil {
				resp.Body.Close()
				first <- resp.StatusCode
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		first <- 0
	}()
	p := startBinaryEnv(t, activate, nil, "-l", addr, bin, "serve", "--listen", "127.0.0.1:1", "--sim-ttft", "1ms")
	assert.Equal(t, 200, <-first, "the connection that started npud was answered")
	defer func() {
		p.signal(t, syscall.SIGTERM)
		p.wait(t, 30*time.Second)
	}()
	assert.Equal(t, addr, p.addr, "npud serves on the inherited socket")
	assert.Contains(t, p.log(), "serving on the socket systemd passed")
	resp, raw := daemontest.NewClient(t, "http://"+addr).Do(t, "POST", "/v1/chat/completions", tinyChat)
	assert.Equal(t, 200, resp.StatusCode, "%s", raw)
}

// requireTool skips a test whose tool is missing, except in CI, where the
// Makefile installs it and its absence is a failure.
func requireTool(t *testing.T, what string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is missing (make test installs it)", what)
	}
	t.Skipf("%s is missing; make test installs it", what)
}
