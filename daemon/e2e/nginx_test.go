package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/sim"
)

// nginxMain is nginx's main configuration for a test: in the
// foreground, its files in dir, and the http block's body.
func nginxMain(dir, http string) string {
	return fmt.Sprintf(`daemon off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log stderr warn;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
%[2]s
}
`, dir, http)
}

// nginxProxy keeps nginx's defaults that break streaming unless the
// upstream opts out: HTTP/1.0 to the upstream, proxy_buffering on, and gzip
// on for event streams. npud's X-Accel-Buffering: no must get events
// through unbuffered, and they must not be compressed.
const nginxProxy = `    gzip on;
    gzip_types text/event-stream application/json;
    gzip_min_length 1;
    server {
        listen %s;
        location / { proxy_pass %s; }
    }`

// startNginx runs nginx in front of upstream and returns its base URL. It
// skips when nginx is missing, except in CI, where `make test` installs it.
func startNginx(t *testing.T, upstream string) string {
	t.Helper()
	return runNginx(t, func(dir, addr string) string { return nginxMain(dir, fmt.Sprintf(nginxProxy, addr, upstream)) })
}

// runNginx runs nginx with the configuration conf makes for its folder
// and listen address, and returns its base URL.
func runNginx(t *testing.T, conf func(dir, addr string) string) string {
	t.Helper()
	bin := proxyBinary(t, "nginx", "nginx-light")
	dir := t.TempDir()
	addr := freeAddr(t)
	confPath := filepath.Join(dir, "nginx.conf")
	require.NoError(t, os.WriteFile(confPath, []byte(conf(dir, addr)), 0o600))
	return runProxy(t, "nginx", addr, exec.CommandContext(t.Context(), bin, "-e", "stderr", "-c", confPath, "-p", dir))
}

// proxyBinary finds a proxy's program; it skips the test when it is
// missing, except in CI, where `make test` installs its Debian package.
func proxyBinary(t *testing.T, name, debianPackage string) string {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err == nil {
		return bin
	}
	bin = "/usr/sbin/" + name
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed (make test installs %s)", name, debianPackage)
		}
		t.Skipf("%s is not installed: apt-get install %s", name, debianPackage)
	}
	return bin
}

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// runProxy starts cmd (a proxy in the foreground), stops it when the test
// ends, and returns its base URL once it listens on addr.
func runProxy(t *testing.T, name, addr string, cmd *exec.Cmd) string {
	t.Helper()
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second // workers inherit the output pipe
	// At the test's end as in the cleanup: the master stops its workers.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM) // the master stops its workers
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s output:\n%s", name, out)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", addr)
		if err == nil {
			c.Close()
			return "http://" + addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not start listening on %s: %v\n%s", name, addr, err, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStreamingThroughNginx(t *testing.T) {
	daemontest.Integration(t, "nginx")
	const stall = 2 * time.Second
	cfg := daemontest.Defaults(t)
	engine := sim.New(sim.Config{TTFT: time.Millisecond, ITL: time.Millisecond,
		// Two tokens, then a long pause: an event buffered by the proxy
		// would only arrive after the pause.
		Faults: func(*npu.Request) sim.Fault { return sim.Fault{StallAtToken: 3, StallFor: stall} }})
	srv := daemontest.Start(t, cfg, engine)
	proxy := startNginx(t, srv.URL)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body := `{"model":"sim","stream":true,"max_tokens":4,"messages":[{"role":"user","content":"hi"}]}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, proxy+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept-Encoding", "gzip") // ask for compression: it must not happen
	transport := &http.Transport{DisableCompression: true}
	defer transport.CloseIdleConnections()
	start := time.Now()
	resp, err := (&http.Client{Transport: transport}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()

	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, []string{"", "identity"}, resp.Header.Get("Content-Encoding"), "event streams must not be compressed")
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))

	sc := bufio.NewScanner(resp.Body)
	var firstContent time.Duration
	var events []string
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		events = append(events, line)
		if firstContent == 0 && strings.Contains(line, `"content":"`) && !strings.Contains(line, `"content":""`) {
			firstContent = time.Since(start)
		}
	}
	require.NoError(t, sc.Err())
	total := time.Since(start)

	require.NotEmpty(t, events)
	assert.Equal(t, "data: [DONE]", events[len(events)-1])
	require.Greater(t, total, stall, "the stream includes the engine's pause")
	assert.Less(t, firstContent, stall/2,
		"the first tokens must pass the proxy before the engine's pause ends (arrived after %s of %s)", firstContent, total)
}
