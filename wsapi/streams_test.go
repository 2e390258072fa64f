package wsapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/wsapi"
)

// wsClient is a test client of /v1/realtime: a real WebSocket over loopback.
type wsClient struct {
	t    *testing.T
	conn *websocket.Conn
}

// serverMsg is any server message.
type serverMsg struct {
	Type          string `json:"type"`
	RequestID     string `json:"request_id"`
	Index         int    `json:"index"`
	Delta         string `json:"delta"`
	FinishReason  string `json:"finish_reason"`
	Code          string `json:"code"`
	Message       string `json:"message"`
	Retryable     bool   `json:"retryable"`
	Joined        bool   `json:"joined"`
	QueuePosition int    `json:"queue_position"`
	ID            any    `json:"id"`
	Usage         struct {
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	ToolCalls []struct {
		Index    int    `json:"index"`
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// dialWS opens npud's WebSocket at base (query appended) and returns the
// handshake's response, whose body coder/websocket closes itself.
//
//bodyclose:handled
func dialWS(t *testing.T, base string, opts *websocket.DialOptions, query string) (*wsClient, *http.Response, error) {
	t.Helper()
	url := strings.Replace(base, "http://", "ws://", 1) + wsapi.StreamsPath + query
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, url, opts)
	if err != nil {
		return nil, resp, err
	}
	c := &wsClient{t: t, conn: conn}
	t.Cleanup(func() { conn.CloseNow() })
	return c, resp, nil
}

func mustDial(t *testing.T, base string) *wsClient {
	t.Helper()
	c, _, err := dialWS(t, base, nil, "")
	require.NoError(t, err)
	return c
}

func (c *wsClient) send(v any) {
	c.t.Helper()
	var b []byte
	switch v := v.(type) {
	case string:
		b = []byte(v)
	default:
		var err error
		b, err = json.Marshal(v)
		require.NoError(c.t, err)
	}
	ctx, cancel := context.WithTimeout(c.t.Context(), 5*time.Second)
	defer cancel()
	require.NoError(c.t, c.conn.Write(ctx, websocket.MessageText, b))
}

func (c *wsClient) next() serverMsg {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), 20*time.Second)
	defer cancel()
	_, data, err := c.conn.Read(ctx)
	require.NoError(c.t, err)
	var m serverMsg
	require.NoError(c.t, json.Unmarshal(data, &m), "%s", data)
	return m
}

// collect reads until every id got its final or error, and returns the
// text and the last message per id.
func (c *wsClient) collect(ids ...string) (map[string]string, map[string]serverMsg) {
	c.t.Helper()
	text, last := map[string]string{}, map[string]serverMsg{}
	open := len(ids)
	for open > 0 {
		m := c.next()
		switch m.Type {
		case "token":
			text[m.RequestID] += m.Delta
		case "final", "error":
			last[m.RequestID] = m
			open--
		}
	}
	return text, last
}

func startMsg(id, content string, maxTokens int, extra ...any) map[string]any {
	m := map[string]any{"type": "start", "request_id": id, "model": "sim", "max_tokens": maxTokens, "seed": 3,
		"messages": []map[string]string{{"role": "user", "content": content}}}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	return m
}

func TestRealtimeInterleavedRequestsOnOneConnection(t *testing.T) {
	srv := startSim(t, nil, nil)
	c := mustDial(t, srv.URL)
	for i := range 3 {
		c.send(startMsg(fmt.Sprintf("r%d", i), fmt.Sprintf("question %d", i), 20))
	}
	c.send(map[string]any{"type": "ping", "id": 42})
	text, last := c.collect("r0", "r1", "r2")
	for i := range 3 {
		id := fmt.Sprintf("r%d", i)
		assert.Equal(t, "final", last[id].Type, "%+v", last[id])
		assert.Equal(t, "length", last[id].FinishReason)
		assert.Equal(t, 20, last[id].Usage.CompletionTokens)
		assert.Equal(t, prefix(3, userPrompt(fmt.Sprintf("question %d", i)), 20), text[id], "%s: the engine's text, whole", id)
	}
}

func TestRealtimeMessagesAndPong(t *testing.T) {
	srv := startSim(t, nil, nil)
	c := mustDial(t, srv.URL)
	c.send(map[string]any{"type": "ping", "id": "p1"})
	m := c.next()
	assert.Equal(t, "pong", m.Type)
	assert.Equal(t, "p1", m.ID)

	for _, bad := range []struct {
		msg  any
		code string
	}{
		{"not json", "invalid_message"},
		{`{"type":"dance"}`, "invalid_message"},
		{`{"type":"start","model":"sim","messages":[]}`, "invalid_request_id"},
		// Issue 12, item 9: the documented character set, as X-Request-ID's.
		{`{"type":"start","request_id":"a b\n<script>","model":"sim","messages":[{"role":"user","content":"hi"}]}`, "invalid_request_id"},
		{`{"type":"start","request_id":"ünïcode","model":"sim","messages":[{"role":"user","content":"hi"}]}`, "invalid_request_id"},
		{`{"type":"start","request_id":"x","model":"sim","messages":[],"max_tokens":-1}`, ""},
		{`{"type":"start","request_id":"y","model":"nope","messages":[{"role":"user","content":"hi"}]}`, "model_not_found"},
		{`{"type":"cancel","request_id":"ghost"}`, "unknown_request"},
	} {
		c.send(bad.msg)
		m := c.next()
		if m.Type == "started" { // validation passed; the engine refuses later
			m = c.next()
		}
		assert.Equal(t, "error", m.Type, "%v → %+v", bad.msg, m)
		if bad.code != "" {
			assert.Equal(t, bad.code, m.Code, "%v", bad.msg)
		}
		assert.NotEmpty(t, m.Message)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	require.NoError(t, c.conn.Write(ctx, websocket.MessageBinary, []byte{1, 2, 3}))
	assert.Equal(t, "invalid_message", c.next().Code)
	// The connection survived all of it.
	c.send(map[string]any{"type": "ping"})
	assert.Equal(t, "pong", c.next().Type)
}

func TestRealtimeCancel(t *testing.T) {
	srv := startSim(t, func(c *daemon.Config) { c.SimITL = 5 * time.Millisecond }, nil)
	c := mustDial(t, srv.URL)
	c.send(startMsg("long", "go on", 20000))
	assert.Equal(t, "started", c.next().Type)
	for c.next().Type != "token" {
	}
	sent := time.Now()
	c.send(map[string]any{"type": "cancel", "request_id": "long"})
	for {
		m := c.next()
		if m.Type == "final" {
			assert.Equal(t, "cancelled", m.FinishReason)
			break
		}
		require.Equal(t, "token", m.Type, "%+v", m)
	}
	assert.Less(t, time.Since(sent), 2*time.Second)
	waitFor(t, func() bool { return activeStreams(t, http.DefaultClient, srv.URL) == 0 })
}

func TestRealtimePauseResumeIsByteIdentical(t *testing.T) {
	srv := startSim(t, func(c *daemon.Config) { c.SimITL = 2 * time.Millisecond }, nil)
	c := mustDial(t, srv.URL)
	c.send(startMsg("p", "pause me", 80))
	var text strings.Builder
	for {
		m := c.next()
		if m.Type == "token" {
			text.WriteString(m.Delta)
			break
		}
	}
	c.send(map[string]any{"type": "pause", "request_id": "p"})
	time.Sleep(300 * time.Millisecond) // the engine finishes meanwhile
	c.send(map[string]any{"type": "resume", "request_id": "p"})
	rest, last := c.collect("p")
	text.WriteString(rest["p"])
	assert.Equal(t, "final", last["p"].Type, "%+v", last["p"])
	assert.Equal(t, prefix(3, userPrompt("pause me"), 80), text.String())
}

func TestRealtimeHardLimitWhilePaused(t *testing.T) {
	srv := startSim(t, func(c *daemon.Config) {
		c.SimITL = 5 * time.Millisecond // time for the pause to land long before the answer ends
		c.ResumeMaxBytes = 64
	}, nil)
	c := mustDial(t, srv.URL)
	c.send(startMsg("flood", "lots", 30000))
	for c.next().Type != "token" {
	}
	c.send(map[string]any{"type": "pause", "request_id": "flood"})
	// Paused past the limit: the engine is stopped, not left generating
	// into memory.
	waitFor(t, func() bool { return activeStreams(t, http.DefaultClient, srv.URL) == 0 })
	c.send(map[string]any{"type": "resume", "request_id": "flood"})
	for {
		m := c.next()
		if m.Type == "token" {
			continue // what was sent before the pause took effect
		}
		assert.Equal(t, "error", m.Type, "%+v", m)
		assert.Equal(t, "slow_consumer", m.Code)
		assert.True(t, m.Retryable)
		break
	}
}

func TestRealtimeRequestCap(t *testing.T) {
	srv := startSim(t, func(c *daemon.Config) {
		c.WSMaxRequests = 1
		c.SimITL = 5 * time.Millisecond
	}, nil)
	c := mustDial(t, srv.URL)
	c.send(startMsg("one", "a", 1000))
	assert.Equal(t, "started", c.next().Type)
	c.send(startMsg("two", "b", 10))
	for {
		m := c.next()
		if m.RequestID == "two" {
			assert.Equal(t, "error", m.Type)
			assert.Equal(t, "rate_limited", m.Code)
			assert.True(t, m.Retryable)
			break
		}
	}
	c.send(map[string]any{"type": "cancel", "request_id": "one"})
	_, last := c.collect("one")
	assert.Equal(t, "cancelled", last["one"].FinishReason)
}

func TestRealtimeAuthentication(t *testing.T) {
	srv := startSim(t, func(c *daemon.Config) {
		c.APIKeys = []daemon.APIKey{{Name: "web", Key: "sk-web-0123456789"}}
	}, nil)
	_, resp, err := dialWS(t, srv.URL, nil, "")
	require.Error(t, err)
	require.NotNil(t, resp)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	_, resp, err = dialWS(t, srv.URL, nil, "?token=wrong")
	require.Error(t, err)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	byHeader, _, err := dialWS(t, srv.URL, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer sk-web-0123456789"}}}, "")
	require.NoError(t, err)
	byHeader.send(map[string]any{"type": "ping"})
	assert.Equal(t, "pong", byHeader.next().Type)
	byQuery, _, err := dialWS(t, srv.URL, nil, "?token=sk-web-0123456789") // browsers cannot set headers
	require.NoError(t, err)
	byQuery.send(startMsg("q", "hi", 3))
	_, last := byQuery.collect("q")
	assert.Equal(t, "final", last["q"].Type)
}

func TestRealtimeOversizeMessageClosesTheConnection(t *testing.T) {
	srv := startSim(t, func(c *daemon.Config) { c.MaxBodyBytes = 1024 }, nil)
	c := mustDial(t, srv.URL)
	c.send(startMsg("big", strings.Repeat("x", 4096), 5))
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, _, err := c.conn.Read(ctx)
	assert.Equal(t, websocket.StatusMessageTooBig, websocket.CloseStatus(err), "%v", err)
}

// A client that lost its connection starts again with the same
// request_id and resume_from: it gets the rest, and one generation ran.
func TestRealtimeResumeOnANewConnection(t *testing.T) {
	srv := startSim(t, func(c *daemon.Config) { c.SimITL = 3 * time.Millisecond }, nil)
	first := mustDial(t, srv.URL)
	first.send(startMsg("keep", "resume me", 60, "resumable", true))
	var text strings.Builder
	last := -1
	for n := 0; n < 5; {
		m := first.next()
		if m.Type == "token" {
			text.WriteString(m.Delta)
			last = m.Index
			n++
		}
	}
	first.conn.CloseNow() // the link drops

	second := mustDial(t, srv.URL)
	second.send(startMsg("keep", "resume me", 60, "resumable", true, "resume_from", last+1))
	started := second.next()
	assert.Equal(t, "started", started.Type)
	assert.True(t, started.Joined, "joined the running generation")
	rest, final := second.collect("keep")
	text.WriteString(rest["keep"])
	assert.Equal(t, "final", final["keep"].Type)
	assert.Equal(t, prefix(3, userPrompt("resume me"), 60), text.String(), "no gap, no duplicate")
}

// On SIGTERM a connection finishes the generations it runs, refuses new
// ones, and closes with 1001 (going away).
func TestRealtimeDrain(t *testing.T) {
	srv := startSim(t, func(c *daemon.Config) { c.SimITL = 3 * time.Millisecond }, nil)
	c := mustDial(t, srv.URL)
	c.send(startMsg("last", "finish me", 50))
	for c.next().Type != "token" {
	}
	stopped := make(chan error, 1)
	go func() { stopped <- srv.Stop() }()
	text, final := c.collect("last")
	assert.Equal(t, "final", final["last"].Type, "the running generation finished: %+v", final["last"])
	assert.NotEmpty(t, text["last"])
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, _, err := c.conn.Read(ctx)
	assert.Equal(t, websocket.StatusGoingAway, websocket.CloseStatus(err), "%v", err)
	require.NoError(t, <-stopped)
}

// Issue 12, item 12: a generation that outlasted the drain got a bare TCP
// close. It ends with an in-band shutting_down error (retryable), and the
// connection with the close handshake, 1001.
func TestRealtimeGenerationPastTheDrainTimeout(t *testing.T) {
	srv := startSim(t, func(c *daemon.Config) {
		c.SimITL = 20 * time.Millisecond
		c.DrainTimeout = 100 * time.Millisecond
	}, nil)
	c := mustDial(t, srv.URL)
	c.send(startMsg("long", "never finishes in time", 5000))
	for c.next().Type != "token" {
	}
	stopped := make(chan error, 1)
	go func() { stopped <- srv.Stop() }()
	_, last := c.collect("long")
	assert.Equal(t, "error", last["long"].Type, "%+v", last["long"])
	assert.Equal(t, "shutting_down", last["long"].Code)
	assert.True(t, last["long"].Retryable)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, _, err := c.conn.Read(ctx)
	assert.Equal(t, websocket.StatusGoingAway, websocket.CloseStatus(err), "%v", err)
	require.NoError(t, <-stopped)
}

// Issue 12, item 3: a reader that joined a generation and cancelled it
// stopped it for its starter, whose stream then ended without an error.
// A joined reader's cancel detaches that reader only.
func TestRealtimeJoinedReaderCancelsOnlyItself(t *testing.T) {
	srv := startSim(t, func(c *daemon.Config) { c.SimITL = 3 * time.Millisecond }, nil)
	owner, joiner := mustDial(t, srv.URL), mustDial(t, srv.URL)
	owner.send(startMsg("shared", "one story", 60))
	require.Equal(t, "started", owner.next().Type)
	joiner.send(startMsg("shared", "one story", 60))
	started := joiner.next()
	require.Equal(t, "started", started.Type)
	require.True(t, started.Joined)
	joiner.send(map[string]any{"type": "cancel", "request_id": "shared"})
	_, last := joiner.collect("shared")
	assert.Equal(t, "cancelled", last["shared"].FinishReason, "%+v", last["shared"])

	text, final := owner.collect("shared")
	assert.Equal(t, "final", final["shared"].Type, "%+v", final["shared"])
	assert.Equal(t, "length", final["shared"].FinishReason, "the starter's generation ran to its end")
	assert.Equal(t, prefix(3, userPrompt("one story"), 60), text["shared"])
}

// When the starter cancels, a reader that joined is told: its stream ends
// with a final "cancelled", not silently.
func TestRealtimeStarterCancelEndsJoinedReaders(t *testing.T) {
	srv := startSim(t, func(c *daemon.Config) { c.SimITL = 3 * time.Millisecond }, nil)
	owner, joiner := mustDial(t, srv.URL), mustDial(t, srv.URL)
	owner.send(startMsg("shared2", "another story", 200))
	require.Equal(t, "started", owner.next().Type)
	joiner.send(startMsg("shared2", "another story", 200))
	require.True(t, joiner.next().Joined)
	owner.send(map[string]any{"type": "cancel", "request_id": "shared2"})
	_, last := owner.collect("shared2")
	assert.Equal(t, "cancelled", last["shared2"].FinishReason)
	_, last = joiner.collect("shared2")
	assert.Equal(t, "final", last["shared2"].Type, "%+v", last["shared2"])
	assert.Equal(t, "cancelled", last["shared2"].FinishReason)
}

// Issue 13: the WebSocket protocol is npud's own, so it lives at
// /npud/v1/streams; /v1/realtime, OpenAI's Realtime path, still works for
// npud's clients and says it is deprecated.
func TestRealtimeLegacyPathIsDeprecated(t *testing.T) {
	srv := startSim(t, nil, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, strings.Replace(srv.URL, "http://", "ws://", 1)+wsapi.LegacyRealtimePath, nil)
	require.NoError(t, err)
	defer conn.CloseNow()
	assert.Equal(t, "true", resp.Header.Get("Deprecation"))
	assert.Contains(t, resp.Header.Get("Link"), wsapi.StreamsPath)
	c := &wsClient{t: t, conn: conn}
	c.send(map[string]any{"type": "ping", "id": "p"})
	assert.Equal(t, "pong", c.next().Type)
}

// Issue 16: a start message with tools gets the call in its token events,
// in OpenAI's pieces, and a final with finish_reason tool_calls.
func TestRealtimeToolCalls(t *testing.T) {
	srv := startSim(t, nil, nil)
	c := mustDial(t, srv.URL)
	c.send(startMsg("t1", "weather in Oslo?", 200, "tools", []any{map[string]any{"type": "function", "function": map[string]any{
		"name": "get_weather", "parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}}}}))
	var name, args, content string
	for {
		m := c.next()
		if m.Type == "token" {
			content += m.Delta
			for _, d := range m.ToolCalls {
				assert.Equal(t, 0, d.Index)
				name += d.Function.Name
				args += d.Function.Arguments
			}
			continue
		}
		if m.Type == "final" || m.Type == "error" {
			assert.Equal(t, "final", m.Type, "%+v", m)
			assert.Equal(t, "tool_calls", m.FinishReason)
			break
		}
	}
	assert.Empty(t, content)
	assert.Equal(t, "get_weather", name)
	var parsed map[string]any
	require.NoError(t, json.Unmarshal([]byte(args), &parsed), args)
	assert.IsType(t, "", parsed["city"])
}

// Issue 25 item 1: the images of a WebSocket start hold their share of
// the image memory until the generation ends, and give it back whether it
// ran (here twice in a row under a budget that holds one picture) or was
// refused (an unknown model is refused before any decode).
func TestRealtimeImagesGiveTheirMemoryBack(t *testing.T) {
	var file bytes.Buffer
	require.NoError(t, png.Encode(&file, image.NewGray(image.Rect(0, 0, 64, 64)))) // 4 KiB + 12 KiB RGB
	url := "data:image/png;base64," + base64.StdEncoding.EncodeToString(file.Bytes())
	srv := startSim(t, func(c *daemon.Config) { c.MaxImageMemory = 20 << 10 }, nil)
	c := mustDial(t, srv.URL)
	start := func(id, model string) map[string]any {
		return map[string]any{"type": "start", "request_id": id, "model": model, "max_tokens": 3,
			"messages": []map[string]any{{"role": "user", "content": []map[string]any{
				{"type": "image_url", "image_url": map[string]string{"url": url}}}}}}
	}
	c.send(start("nope", "no-such-model"))
	_, last := c.collect("nope")
	assert.Equal(t, "model_not_found", last["nope"].Code, "%+v", last["nope"])
	for _, id := range []string{"one", "two", "three"} {
		c.send(start(id, "sim"))
		_, last := c.collect(id)
		require.Equal(t, "final", last[id].Type, "%s: %+v", id, last[id])
	}
}
