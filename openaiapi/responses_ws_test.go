package openaiapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu/sim"
)

// respConn is a connection of the Responses API's WebSocket mode, opened
// and read by openai-go's own WebSocket client.
type respConn struct {
	t    *testing.T
	conn *responses.ResponseConnection
}

func dialResponses(t *testing.T, base, key string) (*respConn, error) {
	t.Helper()
	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, err := client.Responses.Connect(ctx, responses.ResponseConnectionOptions{})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { conn.Abort() })
	return &respConn{t: t, conn: conn}, nil
}

func mustDialResponses(t *testing.T, base string) *respConn {
	t.Helper()
	c, err := dialResponses(t, base, "unused")
	require.NoError(t, err)
	return c
}

// create sends a response.create with body's fields.
func (c *respConn) create(body map[string]any) {
	c.t.Helper()
	msg := map[string]any{"type": "response.create"}
	for k, v := range body {
		msg[k] = v
	}
	b, err := json.Marshal(msg)
	require.NoError(c.t, err)
	c.sendRaw(b)
}

func (c *respConn) sendRaw(b []byte) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), 5*time.Second)
	defer cancel()
	require.NoError(c.t, c.conn.SendRaw(ctx, b))
}

func (c *respConn) recv() responses.ResponsesServerEventUnion {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), 20*time.Second)
	defer cancel()
	ev, err := c.conn.Recv(ctx)
	require.NoError(c.t, err)
	return ev
}

// turn reads one response's events up to its terminal one (or an error
// before it began) and checks their numbering.
func (c *respConn) turn() []responses.ResponsesServerEventUnion {
	c.t.Helper()
	var events []responses.ResponsesServerEventUnion
	for {
		ev := c.recv()
		events = append(events, ev)
		switch ev.Type {
		case "response.completed", "response.incomplete", "response.failed":
			for i, e := range events {
				var n struct {
					SequenceNumber int64 `json:"sequence_number"`
				}
				require.NoError(c.t, json.Unmarshal([]byte(e.RawJSON()), &n))
				assert.Equal(c.t, int64(i), n.SequenceNumber, "event %d (%s) is numbered in order", i, e.Type)
			}
			return events
		case "error":
			if len(events) == 1 { // refused before it began
				return events
			}
		}
	}
}

func text(events []responses.ResponsesServerEventUnion) string {
	var b strings.Builder
	for _, ev := range events {
		if ev.Type == "response.output_text.delta" {
			b.WriteString(ev.AsResponseOutputTextDelta().Delta)
		}
	}
	return b.String()
}

func final(t *testing.T, events []responses.ResponsesServerEventUnion) responses.Response {
	t.Helper()
	last := events[len(events)-1]
	switch last.Type {
	case "response.completed":
		return last.AsResponseCompleted().Response
	case "response.incomplete":
		return last.AsResponseIncomplete().Response
	case "response.failed":
		return last.AsResponseFailed().Response
	}
	require.Failf(t, "no terminal event", "last event %s: %s", last.Type, last.RawJSON())
	return responses.Response{}
}

// storeOf reads the response's store flag (openai-go's Response has none).
func storeOf(t *testing.T, r responses.Response) bool {
	t.Helper()
	var s struct {
		Store bool `json:"store"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.RawJSON()), &s))
	return s.Store
}

func wsError(t *testing.T, ev responses.ResponsesServerEventUnion) responses.ResponsesServerEventResponseWsError {
	t.Helper()
	require.Equal(t, "error", ev.Type, "%s", ev.RawJSON())
	return ev.AsResponsesServerEventResponseWsError()
}

// functionWeatherTool is a Responses API tool (a function, flat).
var functionWeatherTool = map[string]any{"type": "function", "name": "get_weather",
	"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}}

// Several responses in sequence on one connection, each continuing the
// last by previous_response_id although none was stored (store: false,
// as Codex sends them): the connection keeps its latest response, as
// OpenAI's WebSocket mode does. A function call goes round the loop.
func TestResponsesWebSocketConversation(t *testing.T) {
	srv := startSim(t, nil, nil)
	c := mustDialResponses(t, srv.URL)

	c.create(map[string]any{"model": "sim", "input": "hi", "store": false})
	first := c.turn()
	assert.Equal(t, "response.created", first[0].Type)
	assert.Equal(t, "response.in_progress", first[1].Type)
	assert.Equal(t, "response.completed", first[len(first)-1].Type)
	assert.Equal(t, prefix(0, userPrompt("hi"), 0), text(first))
	firstResp := final(t, first)
	assert.False(t, storeOf(t, firstResp))

	c.create(map[string]any{"model": "sim", "store": false, "previous_response_id": firstResp.ID,
		"input": "What is the weather in Paris?", "tools": []any{functionWeatherTool}})
	second := final(t, c.turn())
	require.NotEmpty(t, second.Output)
	call := second.Output[len(second.Output)-1]
	require.Equal(t, "function_call", call.Type, "%s", second.RawJSON())
	assert.Equal(t, "get_weather", call.Name)
	assert.Greater(t, second.Usage.InputTokens, firstResp.Usage.InputTokens+firstResp.Usage.OutputTokens,
		"the first exchange is in the prompt")

	c.create(map[string]any{"model": "sim", "store": false, "previous_response_id": second.ID, "tools": []any{functionWeatherTool},
		"input": []any{map[string]any{"type": "function_call_output", "call_id": call.CallID, "output": `{"temp_c": 18}`}}})
	third := c.turn()
	answer := final(t, third)
	assert.Equal(t, "response.completed", third[len(third)-1].Type)
	assert.NotEmpty(t, text(third))
	assert.Greater(t, answer.Usage.InputTokens, second.Usage.InputTokens, "the call and its output are in the prompt")

	// Unstored responses live in the connection only: a new connection,
	// or HTTP, cannot continue one.
	other := mustDialResponses(t, srv.URL)
	other.create(map[string]any{"model": "sim", "input": "again", "previous_response_id": answer.ID})
	e := wsError(t, other.recv())
	assert.Equal(t, int64(http.StatusBadRequest), e.Status)
	assert.Equal(t, "previous_response_not_found", e.Error.Code)
	assert.Equal(t, "previous_response_id", e.Error.Param)
}

// A stored response (store defaults to true) is the tenant's, over HTTP
// and on any connection; a warmup (generate: false) generates nothing and
// can be continued.
func TestResponsesWebSocketStoreAndWarmup(t *testing.T) {
	srv := startSim(t, nil, nil)
	c := mustDialResponses(t, srv.URL)
	c.create(map[string]any{"model": "sim", "input": "hi"})
	stored := final(t, c.turn())
	assert.True(t, storeOf(t, stored))

	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("unused"))
	got, err := client.Responses.Get(t.Context(), stored.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	assert.Equal(t, stored.OutputText(), got.OutputText())

	other := mustDialResponses(t, srv.URL)
	other.create(map[string]any{"model": "sim", "input": "go on", "previous_response_id": stored.ID})
	goOn := other.turn()
	assert.Equal(t, "response.completed", goOn[len(goOn)-1].Type)

	other.create(map[string]any{"model": "sim", "store": false, "generate": false,
		"input": []any{map[string]any{"role": "developer", "content": "be brief"}}})
	warm := other.turn()
	require.Len(t, warm, 3, "created, in_progress, completed")
	warmResp := final(t, warm)
	assert.Empty(t, warmResp.Output)
	assert.Zero(t, warmResp.Usage.OutputTokens)
	other.create(map[string]any{"model": "sim", "store": false, "previous_response_id": warmResp.ID, "input": "hi"})
	after := other.turn()
	assert.Equal(t, "response.completed", after[len(after)-1].Type)
	assert.Greater(t, final(t, after).Usage.InputTokens, int64(sim.CountTokens(userPrompt("hi"))), "the warmup's input is in the prompt")
}

// Every refusal is an error message in the WebSocket mode's shape (the
// status HTTP would have had, OpenAI's error object), and the connection
// stays open for the next response.
func TestResponsesWebSocketErrors(t *testing.T) {
	srv := startSim(t, nil, nil)
	c := mustDialResponses(t, srv.URL)
	for _, tc := range []struct {
		name   string
		msg    string
		status int64
		code   string
		param  string
	}{
		{"no input", `{"type":"response.create","model":"sim"}`, 400, "missing_required_parameter", "input"},
		{"unknown model", `{"type":"response.create","model":"nope","input":"hi"}`, 404, "model_not_found", "model"},
		{"unknown previous", `{"type":"response.create","model":"sim","input":"hi","previous_response_id":"resp_nope"}`, 400, "previous_response_not_found", "previous_response_id"},
		{"background", `{"type":"response.create","model":"sim","input":"hi","background":true}`, 400, "unsupported_parameter", "background"},
		{"hosted tool", `{"type":"response.create","model":"sim","input":"hi","tools":[{"type":"file_search"}]}`, 400, "unsupported_value", "tools[0].type"},
		{"unknown type", `{"type":"session.update"}`, 400, "unknown_event_type", ""},
		{"not json", `{"type":`, 400, "invalid_json", ""},
		{"cancel of nothing", `{"type":"response.cancel"}`, 404, "response_not_found", "response_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.sendRaw([]byte(tc.msg))
			e := wsError(t, c.recv())
			assert.Equal(t, tc.status, e.Status)
			assert.Equal(t, tc.code, e.Error.Code)
			assert.Equal(t, tc.param, e.Error.Param)
			assert.NotEmpty(t, e.Error.Message)
			assert.Equal(t, "invalid_request_error", e.Error.Type)
			if tc.code == "model_not_found" {
				assert.Contains(t, e.Error.Message, "--alias NAME=MODEL")
			}
		})
	}
	// Codex acknowledges each response; that needs no answer.
	c.sendRaw([]byte(`{"type":"response.processed","response_id":"resp_x"}`))
	c.create(map[string]any{"model": "sim", "input": "still here"})
	events := c.turn()
	assert.Equal(t, "response.completed", events[len(events)-1].Type)
}

// The upgrade takes the API key as every request does; a refused one is
// OpenAI's 401, before any WebSocket. A stored response is its key's.
func TestResponsesWebSocketAuthentication(t *testing.T) {
	srv := startSim(t, func(c *daemon.Config) {
		c.APIKeys = []daemon.APIKey{{Name: "a", Key: "sk-a-0123456789"}, {Name: "b", Key: "sk-b-0123456789"}}
	}, nil)
	for _, key := range []string{"", "wrong"} {
		_, err := dialResponses(t, srv.URL, key)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "401", "key %q", key)
		_, resp, err := websocket.Dial(t.Context(), strings.Replace(srv.URL, "http", "ws", 1)+"/v1/responses",
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + key}}})
		require.Error(t, err)
		require.NotNil(t, resp)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	}
	a, err := dialResponses(t, srv.URL, "sk-a-0123456789")
	require.NoError(t, err)
	a.create(map[string]any{"model": "sim", "input": "mine"})
	mine := final(t, a.turn())
	b, err := dialResponses(t, srv.URL, "sk-b-0123456789")
	require.NoError(t, err)
	b.create(map[string]any{"model": "sim", "input": "yours?", "previous_response_id": mine.ID})
	assert.Equal(t, "previous_response_not_found", wsError(t, b.recv()).Error.Code)
}

// One response at a time: a response.create while one runs is refused,
// and the running one goes on. npud's response.cancel stops it
// (response.incomplete, status cancelled); closing the connection, which
// is how OpenAI's clients cancel, stops the engine too.
func TestResponsesWebSocketOneAtATimeAndCancel(t *testing.T) {
	srv := startSim(t, func(c *daemon.Config) { c.SimITL = 5 * time.Millisecond }, nil)
	c := mustDialResponses(t, srv.URL)
	c.create(map[string]any{"model": "sim", "input": "a long one", "max_output_tokens": 2000})
	for c.recv().Type != "response.output_text.delta" {
	}
	c.create(map[string]any{"model": "sim", "input": "meanwhile"})
	var refused bool
	for !refused {
		ev := c.recv()
		if ev.Type == "error" {
			assert.Equal(t, "response_already_in_flight", wsError(t, ev).Error.Code)
			refused = true
		}
	}
	c.sendRaw([]byte(`{"type":"response.cancel"}`))
	var last responses.ResponsesServerEventUnion
	for last.Type != "response.incomplete" {
		last = c.recv()
		require.NotContains(t, []string{"response.completed", "response.failed", "error"}, last.Type, "%s", last.RawJSON())
	}
	assert.Equal(t, responses.ResponseStatusCancelled, last.AsResponseIncomplete().Response.Status)
	c.create(map[string]any{"model": "sim", "input": "next"})
	events := c.turn()
	assert.Equal(t, "response.completed", events[len(events)-1].Type)

	c.create(map[string]any{"model": "sim", "input": "abandoned", "max_output_tokens": 2000})
	for c.recv().Type != "response.output_text.delta" {
	}
	c.conn.Abort()
	waitFor(t, func() bool { return activeStreams(t, http.DefaultClient, srv.URL) == 0 })
}

// A drain lets the running response finish (its terminal event goes out)
// and closes with 1001; past the drain timeout the response ends with an
// error event and response.failed, then the close handshake.
func TestResponsesWebSocketDrain(t *testing.T) {
	for _, tc := range []struct {
		name     string
		timeout  time.Duration
		terminal string
	}{
		{"finishes", 30 * time.Second, "response.completed"},
		{"past the timeout", 100 * time.Millisecond, "response.failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startSim(t, func(c *daemon.Config) {
				c.SimITL = 10 * time.Millisecond
				c.DrainTimeout = tc.timeout
			}, nil)
			c := mustDialResponses(t, srv.URL)
			body := map[string]any{"model": "sim", "input": "finish me"}
			if tc.terminal == "response.failed" {
				body["max_output_tokens"] = 5000
			}
			c.create(body)
			for c.recv().Type != "response.output_text.delta" {
			}
			stopped := make(chan error, 1)
			go func() { stopped <- srv.Stop() }()
			var types []string
			for {
				ev := c.recv()
				types = append(types, ev.Type)
				if ev.Type == tc.terminal {
					break
				}
				require.NotContains(t, []string{"response.completed", "response.failed", "response.incomplete"}, ev.Type)
			}
			if tc.terminal == "response.failed" {
				require.GreaterOrEqual(t, len(types), 2)
				assert.Equal(t, "error", types[len(types)-2], "an error event, then response.failed")
			}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			_, err := c.conn.Recv(ctx)
			assert.Equal(t, websocket.StatusGoingAway, websocket.CloseStatus(err), "%v", err)
			require.NoError(t, <-stopped)
		})
	}
}

// A connection carries at most --ws-max-messages client messages; then
// it says so with the code OpenAI's clients connect again on, and closes.
// A message past the body limit closes it (1009).
func TestResponsesWebSocketBounds(t *testing.T) {
	srv := startSim(t, func(c *daemon.Config) {
		c.WSMaxMessages = 2
		c.MaxBodyBytes = 4096
	}, nil)
	c := mustDialResponses(t, srv.URL)
	for range 2 {
		c.create(map[string]any{"model": "sim", "input": "hi"})
		events := c.turn()
		assert.Equal(t, "response.completed", events[len(events)-1].Type)
	}
	c.create(map[string]any{"model": "sim", "input": "one too many"})
	assert.Equal(t, "websocket_connection_limit_reached", wsError(t, c.recv()).Error.Code)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := c.conn.Recv(ctx)
	assert.Equal(t, websocket.StatusNormalClosure, websocket.CloseStatus(err), "%v", err)

	big := mustDialResponses(t, srv.URL)
	big.create(map[string]any{"model": "sim", "input": strings.Repeat("x", 8192)})
	_, err = big.conn.Recv(ctx)
	assert.Equal(t, websocket.StatusMessageTooBig, websocket.CloseStatus(err), "%v", err)
}

// GET /v1/responses without an upgrade is a 400 in OpenAI's shape; POST
// on the same path is the HTTP API, untouched.
func TestResponsesWebSocketNeedsTheUpgrade(t *testing.T) {
	srv := startSim(t, nil, nil)
	resp, err := daemontest.Get(t.Context(), http.DefaultClient, srv.URL+"/v1/responses")
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
	assert.Equal(t, "websocket_upgrade_required", e.Error.Code)
}

// Each response of a connection is a generation in the metrics, on the
// route /v1/responses, as an HTTP one is; the connection itself is none
// (GET /v1/responses shares its path with a generation route).
func TestResponsesWebSocketMetrics(t *testing.T) {
	srv := startSim(t, nil, nil)
	c := mustDialResponses(t, srv.URL)
	for range 2 {
		c.create(map[string]any{"model": "sim", "input": "hi"})
		c.turn()
	}
	metric := func(prefix string) float64 {
		resp, err := daemontest.Get(t.Context(), http.DefaultClient, srv.URL+"/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var n float64
		for _, line := range strings.Split(string(raw), "\n") {
			if strings.HasPrefix(line, prefix+"{") && strings.Contains(line, `route="/v1/responses"`) {
				var v float64
				_, err := fmt.Sscanf(line[strings.LastIndex(line, " ")+1:], "%g", &v)
				require.NoError(t, err, line)
				n += v
			}
		}
		return n
	}
	total := func() float64 { return metric("npud_requests_total") }
	waitFor(t, func() bool { return total() == 2 })
	// Open and idle, the connection is no active stream.
	assert.Zero(t, metric("npud_active_streams"))
	require.NoError(t, c.conn.Close())
	assert.Equal(t, 2.0, total(), "the connection's end adds no request")
}
