package openaiapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/sim"
)

// countingSim counts generations.
type countingSim struct {
	*sim.Engine
	generations atomic.Int32
}

func (c *countingSim) Generate(ctx context.Context, req *npu.Request, sink npu.Sink) (npu.Result, error) {
	c.generations.Add(1)
	return c.Engine.Generate(ctx, req, sink)
}

func startCounting(t *testing.T, itl time.Duration) (*daemontest.Server, *countingSim) {
	t.Helper()
	cfg := daemontest.Defaults(t)
	cfg.ResumeWindow = 5 * time.Second
	engine := &countingSim{Engine: sim.New(sim.Config{TTFT: time.Millisecond, ITL: itl})}
	return daemontest.Start(t, cfg, engine), engine
}

// idEvent is one parsed event: its id (-1 without one) and data.
type idEvent struct {
	id   int
	data string
}

// readEvents parses an SSE body until EOF or until stop returns true.
func readEvents(r io.Reader, stop func(idEvent) bool) ([]idEvent, error) {
	var out []idEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	cur := idEvent{id: -1}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.data != "" {
				out = append(out, cur)
				if stop != nil && stop(cur) {
					return out, nil
				}
			}
			cur = idEvent{id: -1}
		case strings.HasPrefix(line, "id: "):
			n, err := strconv.Atoi(strings.TrimPrefix(line, "id: "))
			if err != nil {
				return out, err
			}
			cur.id = n
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		}
	}
	return out, sc.Err()
}

// contentOf joins the content deltas of chat chunks and says whether the
// stream finished ([DONE] seen).
func contentOf(t *testing.T, events []idEvent) (string, bool) {
	t.Helper()
	var b strings.Builder
	done := false
	for _, ev := range events {
		if ev.data == "[DONE]" {
			done = true
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct{ Content string }
			}
			Error *json.RawMessage
		}
		require.NoError(t, json.Unmarshal([]byte(ev.data), &chunk), ev.data)
		require.Nil(t, chunk.Error, ev.data)
		if len(chunk.Choices) > 0 {
			b.WriteString(chunk.Choices[0].Delta.Content)
		}
	}
	return b.String(), done
}

const resumableBody = `{"model":"sim","stream":true,"resumable":true,"seed":7,"max_tokens":120,"messages":[{"role":"user","content":"tell me everything"}]}`

func post(t *testing.T, ctx context.Context, base, body string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	// A fresh connection per attempt, so dropping it is a real TCP close.
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := hc.Do(req)
	require.NoError(t, err)
	return resp
}

// Without an id, events carry no id: lines (some SDKs break on them).
func TestNoEventIDsUnlessOptedIn(t *testing.T) {
	srv, _ := startCounting(t, 0)
	for _, header := range [][]string{nil, {"Idempotency-Key", "not-resumable-1"}} {
		resp := post(t, t.Context(), srv.URL, `{"model":"sim","stream":true,"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, header...)
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.NotContains(t, string(raw), "id: ")
		assert.True(t, strings.HasSuffix(string(raw), "data: [DONE]\n\n"))
	}
}

// Drop the connection at random points and reconnect with Last-Event-ID:
// the reassembled text equals an uninterrupted run, with one generation.
func TestResumeAfterDroppedConnections(t *testing.T) {
	srv, engine := startCounting(t, 2*time.Millisecond)
	// The uninterrupted run, under another id.
	resp := post(t, t.Context(), srv.URL, resumableBody, "Idempotency-Key", "whole-run")
	whole, err := readEvents(resp.Body, nil)
	resp.Body.Close()
	require.NoError(t, err)
	want, done := contentOf(t, whole)
	require.True(t, done)
	require.NotEmpty(t, want)
	for i, ev := range whole[:len(whole)-1] {
		if i > 0 { // the role chunk rides without an id
			assert.GreaterOrEqual(t, ev.id, 0, "event %d has an id", i)
		}
	}

	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 5 {
		id := "resume-" + strconv.Itoa(round)
		var got []idEvent
		last := -1
		for attempt := 0; ; attempt++ {
			require.Less(t, attempt, 50, "too many reconnects")
			ctx, cancel := context.WithCancel(t.Context())
			header := []string{"Idempotency-Key", id}
			if last >= 0 {
				header = append(header, "Last-Event-ID", strconv.Itoa(last))
			}
			resp := post(t, ctx, srv.URL, resumableBody, header...)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			dropAfter := 1 + rng.IntN(8)
			n := 0
			events, _ := readEvents(resp.Body, func(ev idEvent) bool {
				n++
				return n >= dropAfter && ev.data != "[DONE]"
			})
			cancel() // drop the TCP connection mid-stream
			resp.Body.Close()
			for _, ev := range events {
				got = append(got, ev)
				if ev.id >= 0 {
					last = ev.id
				}
			}
			if len(events) > 0 && events[len(events)-1].data == "[DONE]" {
				break
			}
		}
		text, done := contentOf(t, got)
		assert.True(t, done)
		assert.Equal(t, want, text, "round %d: no gap, no duplicate", round)
	}
	assert.EqualValues(t, 6, engine.generations.Load(), "one generation per request id")
}

// A second start with the same id while the first runs attaches to it.
func TestDuplicateStartJoinsTheGeneration(t *testing.T) {
	srv, engine := startCounting(t, time.Millisecond)
	var wg sync.WaitGroup
	texts := make([]string, 3)
	for i := range texts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := post(t, t.Context(), srv.URL, `{"model":"sim","stream":true,"max_tokens":60,"messages":[{"role":"user","content":"once"}]}`, "Idempotency-Key", "same-id")
			defer resp.Body.Close()
			events, err := readEvents(resp.Body, nil)
			assert.NoError(t, err)
			texts[i], _ = contentOf(t, events)
		}()
	}
	wg.Wait()
	assert.EqualValues(t, 1, engine.generations.Load())
	assert.Equal(t, texts[0], texts[1])
	assert.Equal(t, texts[0], texts[2])

	// Recently finished: a repeat gets the same answer, whole, without a
	// generation; the official client sees an ordinary response.
	oc := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("unused"),
		option.WithHeader("Idempotency-Key", "whole-once"))
	params := openai.ChatCompletionNewParams{Model: "sim", MaxTokens: openai.Int(10),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("repeat me")}}
	first, err := oc.Chat.Completions.New(t.Context(), params)
	require.NoError(t, err)
	again, err := oc.Chat.Completions.New(t.Context(), params)
	require.NoError(t, err)
	assert.Equal(t, first.Choices[0].Message.Content, again.Choices[0].Message.Content)
	assert.EqualValues(t, 2, engine.generations.Load())

	// The same id with another body is a conflict, not a silent join.
	params.MaxTokens = openai.Int(11)
	_, err = oc.Chat.Completions.New(t.Context(), params, option.WithMaxRetries(0))
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusConflict, apiErr.StatusCode)
	assert.Equal(t, "idempotency_key_conflict", apiErr.Code)
}

// A resumable stream runs on after its client left; without opting in,
// leaving cancels at once.
func TestDisconnectCancelsUnlessResumable(t *testing.T) {
	srv, _ := startCounting(t, 5*time.Millisecond)
	hc := http.DefaultClient
	for _, tc := range []struct {
		body      string
		runsAfter bool
	}{
		{`{"model":"sim","stream":true,"max_tokens":2000,"messages":[{"role":"user","content":"a"}]}`, false},
		{`{"model":"sim","stream":true,"resumable":true,"max_tokens":2000,"messages":[{"role":"user","content":"b"}]}`, true},
	} {
		ctx, cancel := context.WithCancel(t.Context())
		resp := post(t, ctx, srv.URL, tc.body, "Idempotency-Key", "leave-"+strconv.FormatBool(tc.runsAfter))
		_, err := readEvents(resp.Body, func(idEvent) bool { return true })
		require.NoError(t, err)
		cancel()
		resp.Body.Close()
		if tc.runsAfter {
			time.Sleep(200 * time.Millisecond)
			assert.Equal(t, 1.0, activeStreams(t, hc, srv.URL), "still generating for a client that may come back")
			// Nobody comes back: free the engine for the next case.
			resp := post(t, t.Context(), srv.URL, tc.body, "Idempotency-Key", "leave-true", "Last-Event-ID", "0")
			resp.Body.Close()
		} else {
			daemontest.Eventually(t, func() bool { return activeStreams(t, hc, srv.URL) == 0 })
		}
	}
}

func TestResumeErrors(t *testing.T) {
	srv, _ := startCounting(t, 0)
	c := daemontest.NewClient(t, srv.URL)
	resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions", resumableBody, "Idempotency-Key", "never-started", "Last-Event-ID", "3")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), "stream_not_found")
	resp, raw = c.Do(t, http.MethodPost, "/v1/chat/completions", resumableBody, "Idempotency-Key", "x", "Last-Event-ID", "three")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), "invalid_last_event_id")
}

// A reader that joins or resumes a generation later describes the same
// completion: its chunks and answer carry the generation's created time,
// not the second the reader arrived in.
func TestJoinedReadersRepeatTheOriginalCreated(t *testing.T) {
	srv, _ := startCounting(t, time.Millisecond)
	c := daemontest.NewClient(t, srv.URL)
	created := func(raw []byte) string {
		t.Helper()
		i := strings.Index(string(raw), `"created":`)
		require.GreaterOrEqual(t, i, 0, "%s", raw)
		return strings.SplitN(string(raw[i+len(`"created":`):]), ",", 2)[0]
	}
	for _, tc := range []struct{ name, body string }{
		{"stream", `{"model":"sim","stream":true,"max_tokens":4,"messages":[{"role":"user","content":"hi"}]}`},
		{"whole", `{"model":"sim","max_tokens":4,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, first := c.Do(t, http.MethodPost, "/v1/chat/completions", tc.body, "Idempotency-Key", "created-"+tc.name)
			// Into the next second, so a created of the reader's own differs.
			time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 50*time.Millisecond)))
			_, again := c.Do(t, http.MethodPost, "/v1/chat/completions", tc.body, "Idempotency-Key", "created-"+tc.name)
			assert.Equal(t, created(first), created(again))
		})
	}
}

// Issue 12, item 3: joining was a side effect of X-Request-ID, a tracing
// header proxies stamp on every request, and ids were one namespace for
// every tenant. Joining is Idempotency-Key now, scoped to the tenant.
func TestJoiningIsIdempotencyKeyWithinATenant(t *testing.T) {
	alice := daemon.APIKey{Name: "alice", Key: "sk-alice-0123456789"}
	bob := daemon.APIKey{Name: "bob", Key: "sk-bob-0123456789ab"}
	cfg := daemontest.Defaults(t)
	cfg.ResumeWindow = 5 * time.Second
	cfg.APIKeys = []daemon.APIKey{alice, bob}
	engine := &countingSim{Engine: sim.New(sim.Config{TTFT: time.Millisecond, ITL: time.Millisecond})}
	srv := daemontest.Start(t, cfg, engine)
	c := daemontest.NewClient(t, srv.URL)
	body := `{"model":"sim","max_tokens":5,"messages":[{"role":"user","content":"mine"}]}`
	as := func(k daemon.APIKey, h ...string) []string {
		return append([]string{"Authorization", "Bearer " + k.Key}, h...)
	}

	resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions", body, as(alice, "Idempotency-Key", "k-1")...)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	resp, raw = c.Do(t, http.MethodPost, "/v1/chat/completions", body, as(alice, "Idempotency-Key", "k-1", "X-Request-ID", "trace-2")...)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	assert.EqualValues(t, 1, engine.generations.Load(), "alice's repeat joined her generation")
	assert.Equal(t, "trace-2", resp.Header.Get("X-Request-ID"), "the tracing id stays the request's own")

	resp, raw = c.Do(t, http.MethodPost, "/v1/chat/completions", body, as(bob, "Idempotency-Key", "k-1")...)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	assert.EqualValues(t, 2, engine.generations.Load(), "bob's k-1 is his own: he cannot read alice's stream")
	resp, raw = c.Do(t, http.MethodPost, "/v1/chat/completions", strings.Replace(body, "mine", "other", 1), as(bob, "Idempotency-Key", "k-2")...)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "no 409 tells bob that alice used an id: %s", raw)

	for range 2 {
		resp, raw = c.Do(t, http.MethodPost, "/v1/chat/completions", body, as(alice, "X-Request-ID", "same-trace")...)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	}
	assert.EqualValues(t, 5, engine.generations.Load(), "a repeated X-Request-ID is tracing, not a join")

	resp, raw = c.Do(t, http.MethodPost, "/v1/chat/completions", body, as(alice, "Idempotency-Key", "bad key/ü")...)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", raw)
	resp, raw = c.Do(t, http.MethodPost, "/v1/chat/completions", `{"model":"sim","stream":true,"resumable":true,"max_tokens":5,"messages":[{"role":"user","content":"mine"}]}`,
		as(alice, "Idempotency-Key", "k-9", "Last-Event-ID", "9223372036854775807")...)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "an event number that would wrap: %s", raw)
}

// Issue 12, item 10: a generation stopped because its client left was
// replayed to a retrying client as EOF with no error and no [DONE] (or an
// empty 200): the replay ends with the stream's real outcome.
func TestReplayOfAnAbandonedStreamEndsHonestly(t *testing.T) {
	srv, _ := startCounting(t, 5*time.Millisecond)
	body := `{"model":"sim","stream":true,"max_tokens":2000,"messages":[{"role":"user","content":"left"}]}`
	ctx, cancel := context.WithCancel(t.Context())
	resp := post(t, ctx, srv.URL, body, "Idempotency-Key", "abandoned-1")
	_, err := readEvents(resp.Body, func(idEvent) bool { return true })
	require.NoError(t, err)
	cancel() // the only reader leaves: the generation stops
	resp.Body.Close()
	daemontest.Eventually(t, func() bool { return activeStreams(t, http.DefaultClient, srv.URL) == 0 })

	again := post(t, t.Context(), srv.URL, body, "Idempotency-Key", "abandoned-1")
	defer again.Body.Close()
	require.Equal(t, http.StatusOK, again.StatusCode)
	events, err := readEvents(again.Body, nil)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(events), 2)
	assert.Equal(t, "[DONE]", events[len(events)-1].data, "the terminator")
	assert.Contains(t, events[len(events)-2].data, `"code":"stream_abandoned"`, "an in-band error says what happened")

	srv, _ = startCounting(t, 20*time.Millisecond)
	c := daemontest.NewClient(t, srv.URL)
	whole := strings.Replace(body, `"stream":true`, `"stream":false`, 1)
	ctx2, cancel2 := context.WithCancel(t.Context())
	left := make(chan struct{})
	go func() {
		defer close(left)
		req, err := http.NewRequestWithContext(ctx2, http.MethodPost, srv.URL+"/v1/chat/completions",
			strings.NewReader(strings.Replace(whole, "left", "left too", 1)))
		if !assert.NoError(t, err) {
			return
		}
		req.Header.Set("Idempotency-Key", "abandoned-2")
		if resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	daemontest.Eventually(t, func() bool { return activeStreams(t, http.DefaultClient, srv.URL) == 1 })
	time.Sleep(60 * time.Millisecond) // a few tokens of an answer that takes over 600 ms
	cancel2()
	<-left
	daemontest.Eventually(t, func() bool { return activeStreams(t, http.DefaultClient, srv.URL) == 0 })
	r, raw := c.Do(t, http.MethodPost, "/v1/chat/completions", strings.Replace(whole, "left", "left too", 1), "Idempotency-Key", "abandoned-2")
	assert.Equal(t, http.StatusGone, r.StatusCode, "not an empty 200: %s", raw)
	assert.Contains(t, string(raw), "stream_abandoned")
}
