package e2e

import (
	"bufio"
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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu/nputest"
	"github.com/npud/npud/npu/sim"
)

// streamThrough reads one chat stream through base: its text and whether
// it ended with [DONE] and no error event.
func streamThrough(t *testing.T, hc *http.Client, base, prompt string) (string, bool) {
	t.Helper()
	body := `{"model":"sim","stream":true,"seed":1,"max_tokens":40,"messages":[{"role":"user","content":"` + prompt + `"}]}`
	resp, err := daemontest.Post(t.Context(), hc, base+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		return err.Error(), false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, b), false
	}
	var text strings.Builder
	sc := bufio.NewScanner(resp.Body)
	clean, done := true, false
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		switch {
		case !ok:
		case data == "[DONE]":
			done = true
		case strings.Contains(data, `"error"`):
			clean = false
		default:
			if i := strings.Index(data, `"content":"`); i >= 0 {
				rest := data[i+len(`"content":"`):]
				text.WriteString(rest[:strings.Index(rest, `"`)])
			}
		}
	}
	return text.String(), clean && done && sc.Err() == nil
}

// runHAProxy runs HAProxy with the configuration conf makes for its
// listen address, and returns its base URL.
func runHAProxy(t *testing.T, conf func(addr string) string) string {
	t.Helper()
	bin := proxyBinary(t, "haproxy", "haproxy")
	addr := freeAddr(t)
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	require.NoError(t, os.WriteFile(path, []byte(conf(addr)), 0o600))
	return runProxy(t, "haproxy", addr, exec.CommandContext(t.Context(), bin, "-db", "-f", path))
}

// Issue 19: two npud boxes behind a real nginx, then a real HAProxy, with
// the shipped fleet configurations. One box drains (SIGTERM with
// --drain-delay): its running stream finishes whole, its /health answers
// 503, and every new stream goes to the other box and completes.
func TestFleetDrain(t *testing.T) {
	daemontest.Integration(t, "nginx and HAProxy")
	for _, lb := range []string{"nginx", "haproxy"} {
		t.Run(lb, func(t *testing.T) { testFleetDrain(t, lb) })
	}
}

func testFleetDrain(t *testing.T, lb string) {
	start := func() (*daemontest.Server, *nputest.CountingEngine) {
		cfg := daemontest.Defaults(t)
		cfg.SimITL = 15 * time.Millisecond
		cfg.DrainDelay, cfg.DrainTimeout = 1500*time.Millisecond, 30*time.Second
		engine := &nputest.CountingEngine{Engine: sim.New(sim.Config{TTFT: time.Millisecond, ITL: cfg.SimITL})}
		return daemontest.Start(t, cfg, engine), engine
	}
	a, engineA := start()
	b, engineB := start()
	hostA, hostB := strings.TrimPrefix(a.URL, "http://"), strings.TrimPrefix(b.URL, "http://")
	var proxy string
	if lb == "nginx" {
		conf, err := os.ReadFile(filepath.Join("..", "..", "packaging", "fleet", "nginx-npud.conf"))
		require.NoError(t, err)
		proxy = runNginx(t, func(dir, addr string) string {
			c := strings.NewReplacer("server 10.0.0.11:11434", "server "+hostA, "server 10.0.0.12:11434", "server "+hostB,
				"listen 11434;", "listen "+addr+";").Replace(string(conf))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "npud.conf"), []byte(c), 0o600))
			return nginxMain(dir, "    include "+filepath.Join(dir, "npud.conf")+";") // as Debian's nginx.conf includes conf.d
		})
	} else {
		conf, err := os.ReadFile(filepath.Join("..", "..", "packaging", "fleet", "haproxy-npud.cfg"))
		require.NoError(t, err)
		proxy = runHAProxy(t, func(addr string) string {
			return strings.NewReplacer("10.0.0.11:11434", hostA, "10.0.0.12:11434", hostB,
				"bind :11434", "bind "+addr).Replace(string(conf))
		})
	}
	transport := &http.Transport{MaxIdleConnsPerHost: 16}
	defer transport.CloseIdleConnections()
	hc := &http.Client{Transport: transport, Timeout: 60 * time.Second}

	// Both boxes in rotation (a balancer's first health checks may still
	// be under way): short requests until each has served one.
	require.Eventually(t, func() bool {
		resp, err := daemontest.Post(t.Context(), hc, proxy+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"sim","max_tokens":1,"messages":[{"role":"user","content":"warm up"}]}`))
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return engineA.Generations() > 0 && engineB.Generations() > 0
	}, 15*time.Second, 20*time.Millisecond, "both boxes serve")
	baseA, baseB := engineA.Generations(), engineB.Generations()

	want := sim.Prefix(1, "user: before the drain\n", 40)
	// One stream on each box (least_conn), running when A starts draining.
	var wg sync.WaitGroup
	results := make([]bool, 2)
	texts := make([]string, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			texts[i], results[i] = streamThrough(t, hc, proxy, "before the drain")
		}()
	}
	require.Eventually(t, func() bool { return engineA.Generations() == baseA+1 && engineB.Generations() == baseB+1 },
		10*time.Second, 5*time.Millisecond, "least connections gave each box one stream")

	stopped := make(chan error, 1)
	go func() { stopped <- a.Stop() }() // SIGTERM's drain
	require.Eventually(t, func() bool {
		resp, err := daemontest.Get(t.Context(), nil, a.URL+"/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	}, 5*time.Second, 10*time.Millisecond, "a draining box's /health answers 503")

	// New streams while A drains: all complete, all on B.
	for i := range 4 {
		text, ok := streamThrough(t, hc, proxy, fmt.Sprintf("during the drain %d", i))
		assert.True(t, ok, "stream %d: %s", i, text)
		assert.Equal(t, sim.Prefix(1, fmt.Sprintf("user: during the drain %d\n", i), 40), text)
	}
	assert.EqualValues(t, baseA+1, engineA.Generations(), "the draining box took no new stream")
	assert.EqualValues(t, baseB+5, engineB.Generations())

	wg.Wait()
	for i := range 2 {
		assert.True(t, results[i], "the stream running at the drain was not lost: %s", texts[i])
		assert.Equal(t, want, texts[i])
	}
	require.NoError(t, <-stopped)
}
