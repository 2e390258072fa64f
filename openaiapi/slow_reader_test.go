package openaiapi_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
)

// floodEngine produces far more text than socket buffers hold, as fast as
// it can, and records how its generation ended.
type floodEngine struct {
	npu.Unsupported
	chunk  string
	chunks int

	mu      sync.Mutex
	emitted int
	last    npu.Status
}

func (e *floodEngine) Name() string           { return "flood" }
func (e *floodEngine) Simulated() bool        { return true }
func (e *floodEngine) Describe() npu.Features { return npu.Features{} }
func (e *floodEngine) Models() []npu.ModelInfo {
	return []npu.ModelInfo{{ID: "sim", OwnedBy: "test", ContextLength: 1 << 20}}
}

func (e *floodEngine) Generate(ctx context.Context, req *npu.Request, sink npu.Sink) (npu.Result, error) {
	res := npu.Result{FinishReason: npu.FinishStop, PromptTokens: 1}
	for range e.chunks {
		st := sink(e.chunk)
		e.mu.Lock()
		e.emitted++
		e.last = st
		e.mu.Unlock()
		res.CompletionTokens++
		if st != npu.Running {
			break
		}
	}
	return res, nil
}

func (e *floodEngine) outcome() (int, npu.Status) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.emitted, e.last
}

// TestSlowReaderIsBoundedAndToldSo: a client that stops reading cannot make
// the server hold more than the pending limit; the engine is cancelled, and
// when the client reads again it gets the text it missed, coalesced, then
// an in-band slow_consumer error and [DONE].
func TestSlowReaderIsBoundedAndToldSo(t *testing.T) {
	const (
		limit  = 64 << 10
		chunks = 20000
	)
	engine := &floodEngine{chunk: strings.Repeat("x", 1023) + " ", chunks: chunks} // 20 MB in all
	cfg := daemontest.Defaults(t)
	cfg.MaxPendingBytes = limit
	srv := daemontest.Start(t, cfg, engine)

	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 60 * time.Second}
	resp, err := client.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"sim","stream":true,"messages":[{"role":"user","content":"flood"}]}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// Read nothing until the engine has given up.
	waitFor(t, func() bool { _, st := engine.outcome(); return st == npu.Cancel })
	emitted, _ := engine.outcome()
	assert.Less(t, emitted, chunks, "the engine was cancelled long before the end of its output")

	var contentEvents, textBytes int
	var lastData []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 1<<20), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		lastData = append(lastData, line)
		if i := strings.Index(line, `"content":"x`); i >= 0 {
			contentEvents++
			textBytes += strings.Count(line[i:], "x")
		}
	}
	require.NoError(t, sc.Err())
	require.GreaterOrEqual(t, len(lastData), 2)
	assert.Equal(t, "data: [DONE]", lastData[len(lastData)-1])
	assert.Contains(t, lastData[len(lastData)-2], `"code":"slow_consumer"`)
	assert.Less(t, contentEvents, emitted, "chunks were coalesced while the reader was away")
	assert.Positive(t, textBytes)
	_, _ = io.Copy(io.Discard, resp.Body)
}
