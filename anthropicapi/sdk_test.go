package anthropicapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/sim"
)

// TestMain checks that no test leaves a goroutine behind.
func TestMain(m *testing.M) {
	daemontest.ServeIfWorker()
	goleak.VerifyTestMain(m)
}

// client is the official Anthropic Go client pointed at srv, retries off
// so that each call is one request.
func client(t *testing.T, srv *daemontest.Server, key string) anthropic.Client {
	t.Helper()
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	return anthropic.NewClient(
		option.WithBaseURL(srv.URL),
		option.WithAPIKey(key),
		option.WithHTTPClient(&http.Client{Transport: transport}),
		option.WithMaxRetries(0),
	)
}

func sdkContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func userText(text string) []anthropic.MessageParam {
	return []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))}
}

// stream reads a whole stream through the SDK's accumulator.
func stream(t *testing.T, c anthropic.Client, params anthropic.MessageNewParams) (anthropic.Message, []string) {
	t.Helper()
	s := c.Messages.NewStreaming(sdkContext(t), params)
	defer s.Close()
	var msg anthropic.Message
	var types []string
	for s.Next() {
		ev := s.Current()
		types = append(types, ev.Type)
		require.NoError(t, msg.Accumulate(ev))
	}
	require.NoError(t, s.Err())
	return msg, types
}

func textOf(m anthropic.Message) string {
	var b strings.Builder
	for _, c := range m.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

func TestSDKMessage(t *testing.T) {
	srv := daemontest.StartEngine(t, nil, nil)
	c := client(t, srv, "x")
	params := anthropic.MessageNewParams{
		Model: "sim", MaxTokens: 64,
		System:   []anthropic.TextBlockParam{{Text: "You are terse."}},
		Messages: userText("Say hello."),
	}
	whole, err := c.Messages.New(sdkContext(t), params)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(whole.ID, "msg_"), whole.ID)
	assert.Equal(t, anthropic.StopReasonEndTurn, whole.StopReason, whole.RawJSON())
	assert.NotEmpty(t, textOf(*whole))
	assert.Positive(t, whole.Usage.InputTokens)
	assert.Positive(t, whole.Usage.OutputTokens)

	streamed, types := stream(t, c, params)
	assert.Equal(t, "message_start", types[0])
	assert.Equal(t, []string{"content_block_stop", "message_delta", "message_stop"}, types[len(types)-3:])
	assert.Equal(t, anthropic.StopReasonEndTurn, streamed.StopReason)
	assert.Positive(t, streamed.Usage.OutputTokens)
	// The second may read part of the prompt from the engine's cache.
	assert.Equal(t, whole.Usage.InputTokens+whole.Usage.CacheReadInputTokens,
		streamed.Usage.InputTokens+streamed.Usage.CacheReadInputTokens, "message_delta carries the prompt's count")
	if daemontest.EngineUnderTest() == "sim" {
		// The test library's model samples: only the simulator repeats itself.
		assert.Equal(t, textOf(*whole), textOf(streamed), "the same request, the same text")
		assert.Equal(t, whole.Usage.OutputTokens, streamed.Usage.OutputTokens)
	}
}

var weatherTool = anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
	Name:        "get_weather",
	Description: anthropic.String("The weather in a city"),
	InputSchema: anthropic.ToolInputSchemaParam{
		Properties: map[string]any{"city": map[string]any{"type": "string"}},
		Required:   []string{"city"},
	},
}}

// The tool-use loop: the model calls the tool, the client runs it and
// sends the result (one of them an error), the model answers.
func TestSDKToolUseLoop(t *testing.T) {
	srv := daemontest.StartEngine(t, nil, nil)
	c := client(t, srv, "x")
	for _, streaming := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "stream"}[streaming], func(t *testing.T) {
			params := anthropic.MessageNewParams{
				Model: "sim", MaxTokens: 256, Messages: userText("What is the weather in Paris?"),
				Tools:      []anthropic.ToolUnionParam{weatherTool},
				ToolChoice: anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{}},
			}
			send := func() anthropic.Message {
				if streaming {
					m, _ := stream(t, c, params)
					return m
				}
				m, err := c.Messages.New(sdkContext(t), params)
				require.NoError(t, err)
				return *m
			}
			first := send()
			require.Equal(t, anthropic.StopReasonToolUse, first.StopReason, first.RawJSON())
			var call anthropic.ToolUseBlock
			for _, b := range first.Content {
				if b.Type == "tool_use" {
					call = b.AsToolUse()
				}
			}
			require.Equal(t, "get_weather", call.Name)
			require.NotEmpty(t, call.ID)
			var input map[string]any
			require.NoError(t, jsonUnmarshal(call.Input, &input), "input %s", call.Input)
			assert.IsType(t, "", input["city"])

			params.Messages = append(params.Messages, first.ToParam(),
				anthropic.NewUserMessage(anthropic.NewToolResultBlock(call.ID, "sunny, 21 °C", true)))
			params.ToolChoice = anthropic.ToolChoiceUnionParam{OfAuto: &anthropic.ToolChoiceAutoParam{}}
			final := send()
			assert.Equal(t, anthropic.StopReasonEndTurn, final.StopReason, final.RawJSON())
			assert.NotEmpty(t, textOf(final))
		})
	}
}

// Thinking enabled: the reasoning comes back as a thinking block before
// the text, whole and streamed (thinking_delta).
func TestSDKThinking(t *testing.T) {
	daemontest.SimOnly(t, "the test library's model has no thinking template (daemon/openvino_thinking_test.go covers the engine's split)")
	srv := daemontest.StartEngine(t, nil, nil)
	c := client(t, srv, "x")
	params := anthropic.MessageNewParams{
		Model: "sim", MaxTokens: 2048, Messages: userText("Why is the sky blue?"),
		Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
	}
	whole, err := c.Messages.New(sdkContext(t), params)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(whole.Content), 2, whole.RawJSON())
	assert.Equal(t, "thinking", whole.Content[0].Type)
	assert.NotEmpty(t, whole.Content[0].Thinking)
	assert.Equal(t, "text", whole.Content[1].Type)

	streamed, _ := stream(t, c, params)
	require.GreaterOrEqual(t, len(streamed.Content), 2)
	assert.Equal(t, whole.Content[0].Thinking, streamed.Content[0].Thinking)
	assert.Equal(t, textOf(*whole), textOf(streamed))

	// A thinking block sent back is accepted (and not shown to the model again).
	params.Messages = append(params.Messages, whole.ToParam(), anthropic.NewUserMessage(anthropic.NewTextBlock("And at sunset?")))
	_, err = c.Messages.New(sdkContext(t), params)
	require.NoError(t, err)

	params.Thinking = anthropic.ThinkingConfigParamUnion{OfDisabled: &anthropic.ThinkingConfigDisabledParam{}}
	off, err := c.Messages.New(sdkContext(t), params)
	require.NoError(t, err)
	for _, b := range off.Content {
		assert.NotEqual(t, "thinking", b.Type)
	}
}

// A stop sequence ends the text before it and is named in stop_sequence.
func TestSDKStopSequence(t *testing.T) {
	daemontest.SimOnly(t, "the stop string is taken from the simulated model's deterministic text")
	srv := daemontest.StartEngine(t, nil, nil)
	c := client(t, srv, "x")
	params := anthropic.MessageNewParams{Model: "sim", MaxTokens: 64, Messages: userText("Tell me a story.")}
	free, err := c.Messages.New(sdkContext(t), params)
	require.NoError(t, err)
	words := strings.Fields(textOf(*free))
	require.Greater(t, len(words), 4)
	stop := " " + words[3]
	params.StopSequences = []string{stop}
	for _, streaming := range []bool{false, true} {
		var m anthropic.Message
		if streaming {
			m, _ = stream(t, c, params)
		} else {
			got, err := c.Messages.New(sdkContext(t), params)
			require.NoError(t, err)
			m = *got
		}
		assert.Equal(t, anthropic.StopReasonStopSequence, m.StopReason, m.RawJSON())
		assert.Equal(t, stop, m.StopSequence)
		assert.Equal(t, textOf(*free)[:strings.Index(textOf(*free), stop)], textOf(m))
	}
}

// max_tokens: reached is stop_reason max_tokens; one larger than the room
// the prompt leaves is clamped to it, not refused.
func TestSDKMaxTokens(t *testing.T) {
	daemontest.SimOnly(t, "uses the simulated model's context length")
	srv := daemontest.StartSim(t, nil, nil)
	c := client(t, srv, "x")
	short, err := c.Messages.New(sdkContext(t), anthropic.MessageNewParams{Model: "sim", MaxTokens: 3, Messages: userText("Hello")})
	require.NoError(t, err)
	assert.Equal(t, anthropic.StopReasonMaxTokens, short.StopReason)
	assert.Equal(t, int64(3), short.Usage.OutputTokens)

	for _, limit := range []int64{32768 - 1, 64000} { // under the context but over the room; over the context
		// The SDK streams requests with large limits, as Claude Code does.
		m, _ := stream(t, c, anthropic.MessageNewParams{Model: "sim", MaxTokens: limit, Messages: userText("Hello")})
		assert.NotEmpty(t, textOf(m), "max_tokens %d", limit)
	}
}

func apiError(t *testing.T, err error) *anthropic.Error {
	t.Helper()
	var apiErr *anthropic.Error
	require.True(t, errors.As(err, &apiErr), "%v", err)
	return apiErr
}

func TestSDKErrors(t *testing.T) {
	const key = "anthropic-test-key-0123456789"
	srv := daemontest.StartSim(t, func(cfg *daemon.Config) {
		cfg.APIKeys = []daemon.APIKey{{Name: "agent", Key: key}}
	}, func(r *npu.Request) sim.Fault {
		if len(r.Messages) > 0 && r.Messages[len(r.Messages)-1].Content == "fail" {
			return sim.Fault{ErrorAtToken: 3}
		}
		return sim.Fault{}
	})
	c := client(t, srv, key) // the SDK sends x-api-key
	_, err := c.Messages.New(sdkContext(t), anthropic.MessageNewParams{Model: "sim", MaxTokens: 8, Messages: userText("hi")})
	require.NoError(t, err, "x-api-key is accepted")

	wrong := client(t, srv, "wrong-key-0123456789abcdef")
	_, err = wrong.Messages.New(sdkContext(t),
		anthropic.MessageNewParams{Model: "sim", MaxTokens: 8, Messages: userText("hi")})
	e := apiError(t, err)
	assert.Equal(t, http.StatusUnauthorized, e.StatusCode)
	assert.Contains(t, e.RawJSON(), `"type":"authentication_error"`)

	_, err = c.Messages.New(sdkContext(t), anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 8, Messages: userText("hi")})
	e = apiError(t, err)
	assert.Equal(t, http.StatusNotFound, e.StatusCode)
	assert.Contains(t, e.RawJSON(), `"type":"not_found_error"`)
	assert.Contains(t, e.RawJSON(), "--alias NAME=MODEL", "the 404 says how to alias the name")
	assert.Contains(t, e.RawJSON(), "served: sim")

	// An engine failure after the first byte is an error event that ends the stream.
	s := c.Messages.NewStreaming(sdkContext(t), anthropic.MessageNewParams{Model: "sim", MaxTokens: 64, Messages: userText("fail")})
	var types []string
	for s.Next() {
		types = append(types, s.Current().Type)
	}
	require.Error(t, s.Err())
	assert.Contains(t, s.Err().Error(), "api_error")
	assert.Contains(t, types, "content_block_delta", "the failure came after text")
	assert.NotContains(t, types, "message_stop")
	require.NoError(t, s.Close())
}

// The name an agent sends answers once it is an alias, as the 404 says.
func TestSDKAliasedModelName(t *testing.T) {
	srv := daemontest.StartSim(t, func(cfg *daemon.Config) {
		cfg.Aliases = map[string]string{"claude-sonnet-4-5": "sim"}
	}, nil)
	c := client(t, srv, "x")
	m, err := c.Messages.New(sdkContext(t), anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 8, Messages: userText("hi")})
	require.NoError(t, err)
	assert.Equal(t, anthropic.Model("claude-sonnet-4-5"), m.Model, "the name the client asked for")
	n, err := c.Messages.CountTokens(sdkContext(t), anthropic.MessageCountTokensParams{Model: "claude-sonnet-4-5",
		Messages: userText("hi")})
	require.NoError(t, err)
	assert.Positive(t, n.InputTokens)
}

// Issue 29, item 4: max_tokens follows npu.CompletionLimit, as on every
// API: larger than the room the prompt leaves, it is clamped to that room
// and the response says so (X-Npud-Max-Tokens-Clamped), streamed or not;
// only a prompt that leaves no room is a 400. (The API's own rule sent a
// limit at or above the context as none, so no clamp was reported.)
func TestMaxTokensFollowsCompletionLimit(t *testing.T) {
	const contextLength = 24
	srv := daemontest.Start(t, daemontest.Defaults(t), sim.New(sim.Config{ContextLength: contextLength}))
	room := contextLength - sim.CountTokens("user: hi\n")
	for _, stream := range []bool{false, true} {
		body := fmt.Sprintf(`{"model":"sim","max_tokens":32000,"stream":%t,"messages":[{"role":"user","content":"hi"}]}`, stream)
		resp, err := daemontest.Post(t.Context(), http.DefaultClient, srv.URL+"/v1/messages", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
		assert.Equal(t, strconv.Itoa(room), resp.Header.Get("X-Npud-Max-Tokens-Clamped"), "stream %t", stream)
		assert.Contains(t, string(raw), `"stop_reason":"max_tokens"`, "stream %t: %s", stream, raw)
	}
	long := strings.Repeat("word ", 40)
	resp, err := daemontest.Post(t.Context(), http.DefaultClient, srv.URL+"/v1/messages", "application/json",
		strings.NewReader(`{"model":"sim","max_tokens":8,"messages":[{"role":"user","content":"`+long+`"}]}`))
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), `"type":"invalid_request_error"`)
}
