package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
)

func withKeys(keys ...daemon.APIKey) func(*daemon.Config) {
	return func(c *daemon.Config) { c.APIKeys = keys }
}

var (
	alice = daemon.APIKey{Name: "alice", Key: "sk-alice-0123456789"}
	ops   = daemon.APIKey{Name: "ops", Key: "sk-ops-0123456789", Admin: true}
)

const tinyChat = `{"model":"sim","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`
const tinyOllama = `{"model":"sim","prompt":"hi","stream":false,"options":{"num_predict":2}}`

// openAIError decodes OpenAI's error shape.
func openAIError(t *testing.T, raw []byte) (msg, code string) {
	t.Helper()
	var body struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(raw, &body), "%s", raw)
	require.NotNil(t, body.Error.Code, "%s", raw)
	return body.Error.Message, *body.Error.Code
}

func ollamaError(t *testing.T, raw []byte) string {
	t.Helper()
	var body struct {
		Error string `json:"error"`
	}
	require.NoError(t, json.Unmarshal(raw, &body), "%s", raw)
	require.NotEmpty(t, body.Error, "%s", raw)
	return body.Error
}

func TestAuthentication(t *testing.T) {
	srv := daemontest.StartSim(t, withKeys(alice, ops), nil)
	c := daemontest.NewClient(t, srv.URL)
	tests := []struct {
		name, method, path, body string
		header                   []string
		status                   int
		code                     string // OpenAI code; "" = Ollama shape or success
	}{
		{"no key, OpenAI", "POST", "/v1/chat/completions", tinyChat, nil, 401, "missing_api_key"},
		{"wrong key, OpenAI", "POST", "/v1/chat/completions", tinyChat, []string{"Authorization", "Bearer sk-nope"}, 401, "invalid_api_key"},
		{"not a bearer", "POST", "/v1/chat/completions", tinyChat, []string{"Authorization", "Basic " + alice.Key}, 401, "missing_api_key"},
		{"good key, OpenAI", "POST", "/v1/chat/completions", tinyChat, []string{"Authorization", "Bearer " + alice.Key}, 200, ""},
		{"scheme is case-insensitive", "POST", "/v1/chat/completions", tinyChat, []string{"Authorization", "bearer " + alice.Key}, 200, ""},
		{"no key, Ollama", "POST", "/api/generate", tinyOllama, nil, 401, ""},
		{"good key, Ollama", "POST", "/api/generate", tinyOllama, []string{"Authorization", "Bearer " + alice.Key}, 200, ""},
		{"models need a key", "GET", "/v1/models", "", nil, 401, "missing_api_key"},
		{"metrics need a key", "GET", "/metrics", "", nil, 401, "missing_api_key"},
		// Issue 12, item 5: /metrics names every tenant; an admin's view.
		{"metrics with a tenant key", "GET", "/metrics", "", []string{"Authorization", "Bearer " + alice.Key}, 403, "permission_denied"},
		{"metrics with an admin key", "GET", "/metrics", "", []string{"Authorization", "Bearer " + ops.Key}, 200, ""},
		{"health is open", "GET", "/health", "", nil, 200, ""},
		{"HEAD / is open", "HEAD", "/", "", nil, 200, ""},
		{"GET / is open", "GET", "/", "", nil, 200, ""},
		{"admin without a key", "POST", "/admin/reload", `{"model":"sim"}`, nil, 401, "missing_api_key"},
		{"admin with a tenant key", "POST", "/admin/reload", `{"model":"sim"}`, []string{"Authorization", "Bearer " + alice.Key}, 403, "permission_denied"},
		{"admin with an admin key", "POST", "/admin/reload", `{"model":"sim"}`, []string{"Authorization", "Bearer " + ops.Key}, 200, ""},
		// Issue 12, item 2: managing models acts for every tenant.
		{"delete with a tenant key", "DELETE", "/api/delete", `{"model":"sim"}`, []string{"Authorization", "Bearer " + alice.Key}, 403, ""},
		{"copy with a tenant key", "POST", "/api/copy", `{"source":"sim","destination":"x"}`, []string{"Authorization", "Bearer " + alice.Key}, 403, ""},
		{"pull with a tenant key", "POST", "/api/pull", `{"model":"a/b"}`, []string{"Authorization", "Bearer " + alice.Key}, 403, ""},
		{"delete with an admin key", "DELETE", "/api/delete", `{"model":"nope"}`, []string{"Authorization", "Bearer " + ops.Key}, 404, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, raw := c.Do(t, tc.method, tc.path, tc.body, tc.header...)
			require.Equal(t, tc.status, resp.StatusCode, "%s", raw)
			switch {
			case tc.code != "":
				msg, code := openAIError(t, raw)
				assert.Equal(t, tc.code, code)
				assert.NotContains(t, msg, "sk-", "no key is ever echoed")
			case tc.status >= 400:
				assert.NotEmpty(t, ollamaError(t, raw))
			}
			if tc.status == 401 {
				assert.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")
			}
		})
	}
}

// Issue 12, item 5: failed authentication was not throttled: one client
// could try thousands of keys a second. Past its budget an address is
// refused before its key is looked at, a right key included.
func TestFailedAuthenticationIsThrottledPerAddress(t *testing.T) {
	srv := daemontest.StartSim(t, func(c *daemon.Config) {
		c.APIKeys = []daemon.APIKey{alice}
		c.AuthFailureLimit = 3
	}, nil)
	c := daemontest.NewClient(t, srv.URL)
	for i := range 3 {
		resp, raw := c.Do(t, "POST", "/v1/chat/completions", tinyChat, "Authorization", fmt.Sprintf("Bearer sk-guess-%016d", i))
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s", raw)
	}
	for _, key := range []string{"sk-guess-more-0123456789", alice.Key} {
		resp, raw := c.Do(t, "POST", "/v1/chat/completions", tinyChat, "Authorization", "Bearer "+key)
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%s", raw)
		msg, code := openAIError(t, raw)
		assert.Equal(t, "too_many_failed_authentications", code)
		assert.NotContains(t, msg, "sk-")
		assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	}
	resp, raw := c.Do(t, "GET", "/health", "")
	assert.Equal(t, http.StatusOK, resp.StatusCode, "open paths stay open: %s", raw)
}

func TestOfficialClientsSendTheirKeys(t *testing.T) {
	srv := daemontest.StartSim(t, withKeys(alice), nil)
	ctx := t.Context()
	bad := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("sk-wrong"), option.WithMaxRetries(0))
	_, err := bad.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "sim", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusUnauthorized, apiErr.StatusCode)
	assert.Equal(t, "invalid_api_key", apiErr.Code)

	good := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey(alice.Key))
	stream := good.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "sim", MaxTokens: openai.Int(3),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var text strings.Builder
	for stream.Next() {
		if ch := stream.Current().Choices; len(ch) > 0 {
			text.WriteString(ch[0].Delta.Content)
		}
	}
	require.NoError(t, stream.Err())
	assert.NotEmpty(t, text.String())

	// The Ollama Go client takes headers through its HTTP client.
	base, err := parseURL(srv.URL)
	require.NoError(t, err)
	oc := api.NewClient(base, &http.Client{Transport: bearerTransport{alice.Key}})
	var got strings.Builder
	err = oc.Generate(ctx, &api.GenerateRequest{Model: "sim", Prompt: "hi", Options: map[string]any{"num_predict": 3}},
		func(r api.GenerateResponse) error { got.WriteString(r.Response); return nil })
	require.NoError(t, err)
	assert.NotEmpty(t, got.String())
	anon := api.NewClient(base, http.DefaultClient)
	err = anon.Generate(ctx, &api.GenerateRequest{Model: "sim", Prompt: "hi"}, func(api.GenerateResponse) error { return nil })
	var authErr api.AuthorizationError
	require.True(t, errors.As(err, &authErr), "%v", err)
	assert.Equal(t, http.StatusUnauthorized, authErr.StatusCode)
}

type bearerTransport struct{ key string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

func TestNoKeysMeansNoAuthentication(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	c := daemontest.NewClient(t, srv.URL)
	resp, raw := c.Do(t, "POST", "/v1/chat/completions", tinyChat)
	assert.Equal(t, 200, resp.StatusCode, "%s", raw)
	resp, raw = c.Do(t, "POST", "/admin/reload", `{"model":"sim"}`)
	assert.Equal(t, 200, resp.StatusCode, "%s", raw)
}

func TestHostHeaderOnLoopback(t *testing.T) {
	srv := daemontest.StartSim(t, func(c *daemon.Config) { c.AllowedHosts = []string{"npu-box.lan"} }, nil)
	c := daemontest.NewClient(t, srv.URL)
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	tests := []struct {
		host string
		ok   bool
	}{
		{"127.0.0.1" + port, true},
		{"localhost" + port, true},
		{"LOCALHOST", true},
		{"[::1]" + port, true},
		{"127.0.0.2", true},
		{"app.localhost" + port, true},
		{"npu-box.lan" + port, true},
		{"evil.example" + port, false},
		{"evil.example", false},
		{"localhost.evil.example", false},
		{"10.0.0.5" + port, false},
	}
	for _, tc := range tests {
		t.Run(tc.host, func(t *testing.T) {
			for _, path := range []string{"/v1/models", "/api/tags"} {
				resp, raw := c.Do(t, "GET", path, "", "Host", tc.host)
				if tc.ok {
					assert.Equal(t, 200, resp.StatusCode, "%s", raw)
					continue
				}
				require.Equal(t, http.StatusForbidden, resp.StatusCode, "%s", raw)
				if strings.HasPrefix(path, "/api/") {
					assert.Contains(t, ollamaError(t, raw), "not allowed")
				} else {
					_, code := openAIError(t, raw)
					assert.Equal(t, "forbidden_host", code)
				}
			}
		})
	}
}

func TestHostHeaderOnAPublicListenerIsNotChecked(t *testing.T) {
	srv := daemontest.StartSim(t, func(c *daemon.Config) { c.Listen = "0.0.0.0:0" }, nil)
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	c := daemontest.NewClient(t, "http://127.0.0.1"+port)
	resp, raw := c.Do(t, "GET", "/v1/models", "", "Host", "npu-box.example")
	assert.Equal(t, 200, resp.StatusCode, "%s", raw)
}

func TestCORS(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	c := daemontest.NewClient(t, srv.URL)
	// A browser's preflight for the OpenAI JS SDK.
	resp, _ := c.Do(t, "OPTIONS", "/v1/chat/completions", "", "Origin", "http://localhost:5173",
		"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, content-type, x-stainless-os")
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	assert.Equal(t, "http://localhost:5173", resp.Header.Get("Access-Control-Allow-Origin"))
	assert.Contains(t, resp.Header.Get("Access-Control-Allow-Methods"), "POST")
	assert.Contains(t, resp.Header.Get("Access-Control-Allow-Headers"), "x-stainless-os")

	resp, raw := c.Do(t, "POST", "/v1/chat/completions", tinyChat, "Origin", "http://127.0.0.1:3000")
	assert.Equal(t, 200, resp.StatusCode, "%s", raw)
	assert.Equal(t, "http://127.0.0.1:3000", resp.Header.Get("Access-Control-Allow-Origin"))
	assert.Contains(t, resp.Header.Values("Vary"), "Origin")

	for _, origin := range []string{"https://evil.example", "null", "http://localhost.evil.example"} {
		resp, raw = c.Do(t, "POST", "/v1/chat/completions", tinyChat, "Origin", origin)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "%s: %s", origin, raw)
		_, code := openAIError(t, raw)
		assert.Equal(t, "forbidden_origin", code)
		assert.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	resp, raw = c.Do(t, "OPTIONS", "/api/chat", "", "Origin", "https://evil.example", "Access-Control-Request-Method", "POST")
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, ollamaError(t, raw), "evil.example")
}

func TestCORSConfiguredOrigins(t *testing.T) {
	srv := daemontest.StartSim(t, func(c *daemon.Config) {
		c.CORSOrigins = []string{"https://chat.example.org"}
		c.APIKeys = []daemon.APIKey{alice}
	}, nil)
	c := daemontest.NewClient(t, srv.URL)
	// The preflight carries no key and must still pass.
	resp, _ := c.Do(t, "OPTIONS", "/v1/chat/completions", "", "Origin", "https://chat.example.org", "Access-Control-Request-Method", "POST")
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	resp, _ = c.Do(t, "OPTIONS", "/v1/chat/completions", "", "Origin", "http://localhost:5173", "Access-Control-Request-Method", "POST")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a configured list replaces the localhost default")
}

func TestRateLimitPerTenant(t *testing.T) {
	bob := daemon.APIKey{Name: "bob", Key: "sk-bob-0123456789"}
	srv := daemontest.StartSim(t, func(c *daemon.Config) {
		c.APIKeys = []daemon.APIKey{alice, bob}
		c.RateLimit, c.RateBurst = 2, 2 // two at once, then one every 30 s
	}, nil)
	c := daemontest.NewClient(t, srv.URL)
	for i := range 2 {
		resp, raw := c.Do(t, "POST", "/v1/chat/completions", tinyChat, "Authorization", "Bearer "+alice.Key)
		require.Equal(t, 200, resp.StatusCode, "request %d: %s", i, raw)
	}
	resp, raw := c.Do(t, "POST", "/v1/chat/completions", tinyChat, "Authorization", "Bearer "+alice.Key)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%s", raw)
	_, code := openAIError(t, raw)
	assert.Equal(t, "rate_limit_exceeded", code)
	retry := resp.Header.Get("Retry-After")
	assert.Regexp(t, `^(2[0-9]|30)$`, retry, "about 30 s until the next request is allowed")

	resp, raw = c.Do(t, "POST", "/api/generate", tinyOllama, "Authorization", "Bearer "+alice.Key)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Contains(t, ollamaError(t, raw), "rate limit")
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))

	resp, raw = c.Do(t, "POST", "/v1/chat/completions", tinyChat, "Authorization", "Bearer "+bob.Key)
	assert.Equal(t, 200, resp.StatusCode, "another tenant has its own budget: %s", raw)
	resp, _ = c.Do(t, "GET", "/health", "")
	assert.Equal(t, 200, resp.StatusCode, "public paths are not limited")

	// The official client sees a RateLimit error (retries off, so it
	// does not sleep through Retry-After here).
	oc := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey(alice.Key), option.WithMaxRetries(0))
	_, err := oc.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "sim", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusTooManyRequests, apiErr.StatusCode)
}

func TestStreamCapPerTenant(t *testing.T) {
	srv := daemontest.StartSim(t, func(c *daemon.Config) {
		c.APIKeys = []daemon.APIKey{alice}
		c.MaxStreams = 1
		c.SimITL = 20 * time.Millisecond
	}, nil)
	c := daemontest.NewClient(t, srv.URL)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// One long stream holds the tenant's only slot.
	req, err := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"sim","stream":true,"messages":[{"role":"user","content":"hi"}],"max_tokens":500}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+alice.Key)
	long, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer long.Body.Close()
	require.Equal(t, 200, long.StatusCode)

	resp, raw := c.Do(t, "POST", "/v1/chat/completions", tinyChat, "Authorization", "Bearer "+alice.Key)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%s", raw)
	_, code := openAIError(t, raw)
	assert.Equal(t, "too_many_streams", code)
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	resp, _ = c.Do(t, "GET", "/v1/models", "", "Authorization", "Bearer "+alice.Key)
	assert.Equal(t, 200, resp.StatusCode, "the cap counts generations only")

	cancel() // the long stream ends; its slot comes back
	daemontest.Eventually(t, func() bool {
		resp, _ := c.Do(t, "POST", "/v1/chat/completions", tinyChat, "Authorization", "Bearer "+alice.Key)
		return resp.StatusCode == 200
	})
}

func TestSlowBodyIsCutOff(t *testing.T) {
	srv := daemontest.StartSim(t, func(c *daemon.Config) { c.BodyReadTimeout = 200 * time.Millisecond }, nil)
	pr, pw := ioPipe()
	req, err := http.NewRequestWithContext(t.Context(), "POST", srv.URL+"/v1/chat/completions", pr)
	require.NoError(t, err)
	req.ContentLength = int64(len(tinyChat))
	go func() {
		_, _ = pw.Write([]byte(tinyChat[:10])) // then nothing: a slowloris body
		<-t.Context().Done()
		pw.Close()
	}()
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		defer resp.Body.Close()
		assert.GreaterOrEqual(t, resp.StatusCode, 400, "a body that never arrives is refused")
	}
	assert.Less(t, time.Since(start), 10*time.Second, "the handler gave up after the body read timeout")

	// A stream that lasts far longer than the body timeout is not cut.
	c := daemontest.NewClient(t, srv.URL)
	resp2, raw := c.Do(t, "POST", "/v1/chat/completions",
		`{"model":"sim","stream":true,"messages":[{"role":"user","content":"hi"}],"max_tokens":400}`)
	require.Equal(t, 200, resp2.StatusCode)
	assert.Contains(t, string(raw), "data: [DONE]")
	assert.NotContains(t, string(raw), `"error"`)
}

func parseURL(s string) (*url.URL, error) { return url.Parse(s) }

func ioPipe() (*io.PipeReader, *io.PipeWriter) { return io.Pipe() }

// Issue 12, item 13: a listener beyond loopback with no key says, at start,
// who can now use the server.
func TestPublicListenerWithoutKeysWarns(t *testing.T) {
	for _, tc := range []struct {
		listen string
		keys   []daemon.APIKey
		warn   bool
	}{
		{"127.0.0.1:0", nil, false},
		{"0.0.0.0:0", nil, true},
		{"0.0.0.0:0", []daemon.APIKey{alice}, false},
	} {
		t.Run(fmt.Sprintf("%s/%d keys", tc.listen, len(tc.keys)), func(t *testing.T) {
			cfg := daemontest.Defaults(t)
			cfg.Listen, cfg.APIKeys = tc.listen, tc.keys
			var logs syncBuffer
			srv, err := daemon.New(cfg, slog.New(slog.NewTextHandler(&logs, nil)))
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- srv.Serve(ctx) }()
			daemontest.Eventually(t, func() bool { return strings.Contains(logs.String(), "npud listening") })
			cancel()
			require.NoError(t, <-done)
			if tc.warn {
				assert.Contains(t, logs.String(), "level=WARN msg=\"listening beyond loopback with no API key")
			} else {
				assert.NotContains(t, logs.String(), "beyond loopback")
			}
		})
	}
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Issue 12, item 4: a resumable generation runs on after its client left;
// it still holds its tenant's stream slot until it ends.
func TestResumableGenerationKeepsItsStreamSlot(t *testing.T) {
	srv := daemontest.StartSim(t, func(c *daemon.Config) {
		c.APIKeys = []daemon.APIKey{alice}
		c.MaxStreams = 1
		c.SimITL = 10 * time.Millisecond
	}, nil)
	c := daemontest.NewClient(t, srv.URL)
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"sim","stream":true,"resumable":true,"messages":[{"role":"user","content":"hi"}],"max_tokens":300}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+alice.Key)
	req.Header.Set("Idempotency-Key", "keep-running-1")
	long, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, 200, long.StatusCode)
	cancel() // the client leaves; the resumable generation goes on
	long.Body.Close()
	time.Sleep(50 * time.Millisecond)

	resp, raw := c.Do(t, "POST", "/v1/chat/completions", tinyChat, "Authorization", "Bearer "+alice.Key)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "the running generation still counts: %s", raw)
	_, code := openAIError(t, raw)
	assert.Equal(t, "too_many_streams", code)
}

// Issue 12, item 4: WebSocket generations were checked once, at the
// upgrade: every start message now takes from the tenant's request rate,
// and its generation counts against the stream cap.
func TestWebSocketGenerationsCountAgainstTenantLimits(t *testing.T) {
	dial := func(t *testing.T, url, key string) *websocket.Conn {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		conn, _, err := websocket.Dial(ctx, strings.Replace(url, "http://", "ws://", 1)+"/npud/v1/streams",
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + key}}})
		require.NoError(t, err)
		t.Cleanup(func() { conn.CloseNow() })
		return conn
	}
	start := func(t *testing.T, conn *websocket.Conn, id string, maxTokens int) {
		b, err := json.Marshal(map[string]any{"type": "start", "request_id": id, "model": "sim", "max_tokens": maxTokens,
			"messages": []map[string]string{{"role": "user", "content": "hi"}}})
		require.NoError(t, err)
		require.NoError(t, conn.Write(t.Context(), websocket.MessageText, b))
	}
	// next returns the next message about id other than tokens.
	next := func(t *testing.T, conn *websocket.Conn, id string) map[string]any {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		for {
			_, data, err := conn.Read(ctx)
			require.NoError(t, err)
			var m map[string]any
			require.NoError(t, json.Unmarshal(data, &m))
			if m["request_id"] == id && m["type"] != "token" {
				return m
			}
		}
	}

	t.Run("rate", func(t *testing.T) {
		srv := daemontest.StartSim(t, func(c *daemon.Config) {
			c.APIKeys = []daemon.APIKey{alice}
			c.RateLimit, c.RateBurst = 1, 2 // the upgrade and one start
		}, nil)
		conn := dial(t, srv.URL, alice.Key)
		start(t, conn, "one", 2)
		assert.Equal(t, "started", next(t, conn, "one")["type"])
		start(t, conn, "two", 2)
		m := next(t, conn, "two")
		assert.Equal(t, "error", m["type"])
		assert.Equal(t, "rate_limit_exceeded", m["code"])
		assert.Equal(t, true, m["retryable"])
	})
	t.Run("streams", func(t *testing.T) {
		srv := daemontest.StartSim(t, func(c *daemon.Config) {
			c.APIKeys = []daemon.APIKey{alice}
			c.MaxStreams = 1
			c.SimITL = 10 * time.Millisecond
		}, nil)
		conn := dial(t, srv.URL, alice.Key)
		start(t, conn, "long", 500)
		assert.Equal(t, "started", next(t, conn, "long")["type"])
		start(t, conn, "more", 2)
		m := next(t, conn, "more")
		assert.Equal(t, "error", m["type"])
		assert.Equal(t, "too_many_streams", m["code"])
		c := daemontest.NewClient(t, srv.URL)
		resp, raw := c.Do(t, "POST", "/v1/chat/completions", tinyChat, "Authorization", "Bearer "+alice.Key)
		assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "the WebSocket's generation holds the slot: %s", raw)
	})
}
