package openaiapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/sim"
)

// retryAfter checks Retry-After is whole seconds within what clients honour.
func retryAfter(t *testing.T, resp *http.Response) {
	t.Helper()
	secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After %q is whole seconds", resp.Header.Get("Retry-After"))
	assert.True(t, secs >= 1 && secs <= 60, "Retry-After %d", secs)
}

// TestQueueFullIs503: with no room to wait, a request is refused at once
// with a real 503 and Retry-After, streaming or not.
func TestQueueFullIs503(t *testing.T) {
	f := newWireFixture(t, func(c *daemon.Config) { c.MaxQueue = 0 }, hogFaults(nil))
	release := startHog(t, f.HTTP, f.URL)
	for _, stream := range []bool{false, true} {
		t.Run("stream="+strconv.FormatBool(stream), func(t *testing.T) {
			start := time.Now()
			resp, raw := f.post(t, "/v1/chat/completions", chatMaybeStream(stream, ""))
			require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", raw)
			assert.Less(t, time.Since(start), 5*time.Second, "refused at once, not after waiting")
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			retryAfter(t, resp)
			e := decodeError(t, raw)
			assert.Equal(t, "queue_full", e.code())
			assert.Equal(t, "server_error", e.Type)
		})
	}
	release()
	waitFor(t, func() bool { return f.active(t) == 0 })
	resp, raw := f.post(t, "/v1/chat/completions", chatBody(`"max_tokens":2`))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	assert.Equal(t, prefix(9, hiPrompt, 2), checkStream(t, raw, "chat.completion.chunk").text)
}

// TestQueueTimeoutIs503: a request that waits longer than the queue
// timeout gets a 503 with Retry-After; without heartbeats nothing was sent
// before, so that holds for streams too.
func TestQueueTimeoutIs503(t *testing.T) {
	f := newWireFixture(t, func(c *daemon.Config) { c.QueueTimeout, c.Heartbeat = 100*time.Millisecond, 0 }, hogFaults(nil))
	startHog(t, f.HTTP, f.URL)
	for _, stream := range []bool{false, true} {
		t.Run("stream="+strconv.FormatBool(stream), func(t *testing.T) {
			start := time.Now()
			resp, raw := f.post(t, "/v1/chat/completions", chatMaybeStream(stream, ""))
			require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", raw)
			assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "it waited its turn first")
			retryAfter(t, resp)
			assert.Equal(t, "queue_timeout", decodeError(t, raw).code())
		})
	}
}

// TestClientGoneWhileQueuedLeavesTheQueue: a queued client that leaves
// frees its place; it never reaches the engine.
func TestClientGoneWhileQueuedLeavesTheQueue(t *testing.T) {
	f := newWireFixture(t, func(c *daemon.Config) { c.MaxQueue, c.Heartbeat = 1, 0 }, hogFaults(nil))
	release := startHog(t, f.HTTP, f.URL)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.URL+"/v1/chat/completions", strings.NewReader(chatBody("")))
		if err == nil {
			var resp *http.Response
			if resp, err = f.HTTP.Do(req); err == nil {
				resp.Body.Close()
			}
		}
		done <- err
	}()
	waitFor(t, func() bool { return queued(t, f.HTTP, f.URL) == 1 })
	resp, raw := f.post(t, "/v1/chat/completions", chatBody(""))
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "the queue of one is full: %s", raw)

	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	waitFor(t, func() bool { return queued(t, f.HTTP, f.URL) == 0 })
	assert.EqualValues(t, 1, f.active(t), "the hog still runs")

	// The freed place takes a new request, which runs once the hog leaves.
	answered := make(chan []byte, 1)
	go func() {
		resp, err := daemontest.Post(t.Context(), f.HTTP, f.URL+"/v1/chat/completions", "application/json", strings.NewReader(chatBody(`"max_tokens":3`)))
		if err != nil {
			answered <- nil
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answered <- b
	}()
	waitFor(t, func() bool { return queued(t, f.HTTP, f.URL) == 1 })
	release()
	raw = <-answered
	require.NotNil(t, raw)
	assert.Equal(t, prefix(9, hiPrompt, 3), checkStream(t, raw, "chat.completion.chunk").text)
}

// TestDeadlineFinishesWithLength: a per-request deadline (timeout_ms, or
// the server's request timeout) ends the answer early, as a normal finish
// with finish_reason "length", not as an error.
func TestDeadlineFinishesWithLength(t *testing.T) {
	daemontest.SimOnly(t, "needs the simulated timing")
	natural := len(sim.Tokens(9, hiPrompt))
	require.GreaterOrEqual(t, natural, 32) // 32 × 20 ms is far beyond the deadlines below
	tests := []struct {
		name           string
		requestTimeout time.Duration
		extra          string
	}{
		{"timeout_ms", 0, `"timeout_ms":150`},
		{"server request timeout", 150 * time.Millisecond, ``},
		{"timeout_ms wins over the server's", time.Minute, `"timeout_ms":150`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newWireFixture(t, func(c *daemon.Config) { c.SimITL, c.RequestTimeout = 20*time.Millisecond, tc.requestTimeout }, nil)
			extra := `"stream_options":{"include_usage":true}`
			if tc.extra != "" {
				extra = tc.extra + "," + extra
			}
			start := time.Now()
			_, raw := f.post(t, "/v1/chat/completions", chatBody(extra))
			elapsed := time.Since(start)
			s := checkStream(t, raw, "chat.completion.chunk")
			assert.Equal(t, "length", s.finish)
			require.NotNil(t, s.usage)
			assert.Less(t, s.usage.CompletionTokens, natural, "the deadline cut the answer short")
			assert.Equal(t, prefix(9, hiPrompt, s.usage.CompletionTokens), s.text, "what was sent is the start of the answer")
			assert.Less(t, elapsed, time.Duration(natural)*20*time.Millisecond)

			// The same deadline on a whole answer.
			resp, raw := f.post(t, "/v1/chat/completions", chatWhole(tc.extra))
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
			var whole struct {
				Choices []struct {
					FinishReason string `json:"finish_reason"`
				}
				Usage wireUsage
			}
			require.NoError(t, json.Unmarshal(raw, &whole))
			assert.Equal(t, "length", whole.Choices[0].FinishReason)
			assert.Less(t, whole.Usage.CompletionTokens, natural)
		})
	}
}

// TestTokenTimeout: an engine that goes silent ends the stream with a
// token_timeout error: in-band after the 200, a real 504 before it.
func TestTokenTimeout(t *testing.T) {
	tests := []struct {
		name    string
		stallAt int
		stream  bool
		status  int
		wantN   int // tokens delivered before the error
	}{
		{"mid-stream: in-band error then [DONE]", 3, true, http.StatusOK, 2},
		{"before the first token: 504", 1, true, http.StatusGatewayTimeout, 0},
		{"whole answer: 504", 3, false, http.StatusGatewayTimeout, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newWireFixture(t, func(c *daemon.Config) { c.TokenTimeout, c.Heartbeat = 100*time.Millisecond, 0 },
				func(*npu.Request) sim.Fault { return sim.Fault{StallAtToken: tc.stallAt} })
			resp, raw := f.post(t, "/v1/chat/completions", chatMaybeStream(tc.stream, ""))
			require.Equal(t, tc.status, resp.StatusCode, "%s", raw)
			if tc.status == http.StatusOK {
				s := checkStream(t, raw, "chat.completion.chunk")
				require.NotNil(t, s.errorEvent, "%s", raw)
				assert.Equal(t, "token_timeout", s.errorEvent.code())
				assert.Equal(t, "server_error", s.errorEvent.Type)
				assert.Equal(t, prefix(9, hiPrompt, tc.wantN), s.text)
			} else {
				assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
				assert.Equal(t, "token_timeout", decodeError(t, raw).code())
			}
			waitFor(t, func() bool { return f.active(t) == 0 })
		})
	}
}
