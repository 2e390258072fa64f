package openaiapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/nputest"
	"github.com/npud/npud/npu/sim"
)

// sdkFixture is a real npud on loopback and the official OpenAI Go client
// pointed at it, with retries off so each call is one request.
type sdkFixture struct {
	srv    *daemontest.Server
	client openai.Client
	http   *http.Client
}

func newSDKFixture(t *testing.T, mutate func(*daemon.Config), faults func(*npu.Request) sim.Fault) *sdkFixture {
	t.Helper()
	return sdkFixtureFor(t, startSim(t, mutate, faults))
}

func sdkFixtureFor(t *testing.T, srv *daemontest.Server) *sdkFixture {
	t.Helper()
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	hc := &http.Client{Transport: transport}
	client := openai.NewClient(
		option.WithBaseURL(srv.URL+"/v1/"),
		option.WithAPIKey("x"),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	)
	return &sdkFixture{srv: srv, client: client, http: hc}
}

func chatParams(content string, seed int64) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    "sim",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(content)},
		Seed:     openai.Int(seed),
	}
}

func sdkContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// streamChat reads a whole chat stream through the SDK's accumulator.
func streamChat(t *testing.T, f *sdkFixture, params openai.ChatCompletionNewParams) (openai.ChatCompletionAccumulator, []openai.ChatCompletionChunk) {
	t.Helper()
	stream := f.client.Chat.Completions.NewStreaming(sdkContext(t), params)
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	var chunks []openai.ChatCompletionChunk
	for stream.Next() {
		chunk := stream.Current()
		require.True(t, acc.AddChunk(chunk), "chunk %s does not continue the completion", chunk.RawJSON())
		chunks = append(chunks, chunk)
	}
	require.NoError(t, stream.Err())
	return acc, chunks
}

func TestSDKChatStreaming(t *testing.T) {
	f := newSDKFixture(t, nil, nil)
	natural := len(sim.Tokens(7, userPrompt("hi")))
	require.Greater(t, natural, 10)

	tests := []struct {
		name       string
		mutate     func(*openai.ChatCompletionNewParams)
		wantTokens int
		wantReason string
	}{
		{"natural end", func(*openai.ChatCompletionNewParams) {}, natural, "stop"},
		{"max_tokens cuts it", func(p *openai.ChatCompletionNewParams) { p.MaxTokens = openai.Int(5) }, 5, "length"},
		{"max_completion_tokens cuts it", func(p *openai.ChatCompletionNewParams) { p.MaxCompletionTokens = openai.Int(3) }, 3, "length"},
		{"max_tokens above the answer", func(p *openai.ChatCompletionNewParams) { p.MaxTokens = openai.Int(int64(natural + 50)) }, natural, "stop"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			params := chatParams("hi", 7)
			tc.mutate(&params)
			acc, chunks := streamChat(t, f, params)
			require.Len(t, acc.Choices, 1)
			assert.Equal(t, prefix(7, "user: hi\n", tc.wantTokens), acc.Choices[0].Message.Content)
			assert.Equal(t, tc.wantReason, acc.Choices[0].FinishReason)
			assert.Equal(t, "assistant", string(acc.Choices[0].Message.Role))
			require.NotEmpty(t, chunks)
			assert.True(t, strings.HasPrefix(chunks[0].ID, "chatcmpl-"), chunks[0].ID)
			for _, c := range chunks {
				assert.Equal(t, chunks[0].ID, c.ID, "every chunk has the same id")
				assert.Equal(t, chunks[0].Created, c.Created, "every chunk has the same created")
				assert.Equal(t, "sim", c.Model)
				assert.Equal(t, "chat.completion.chunk", string(c.Object))
				assert.False(t, c.JSON.Usage.Valid(), "no usage unless include_usage was asked for")
			}
			assert.Zero(t, acc.Usage.TotalTokens)
		})
	}
}

func TestSDKChatStreamingIncludeUsage(t *testing.T) {
	f := newSDKFixture(t, nil, nil)
	params := chatParams("hi", 3)
	params.MaxTokens = openai.Int(6)
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	acc, chunks := streamChat(t, f, params)

	var usageAt []int
	for i, c := range chunks {
		if c.JSON.Usage.Valid() {
			usageAt = append(usageAt, i)
			assert.Empty(t, c.Choices, "the usage chunk has no choices")
		}
	}
	assert.Equal(t, []int{len(chunks) - 1}, usageAt, "one usage chunk, the last")
	assert.Equal(t, prefix(3, "user: hi\n", 6), acc.Choices[0].Message.Content)
	assert.Equal(t, int64(sim.CountTokens("user: hi\n")), acc.Usage.PromptTokens)
	assert.Equal(t, int64(6), acc.Usage.CompletionTokens)
	assert.Equal(t, acc.Usage.PromptTokens+6, acc.Usage.TotalTokens)
}

func TestSDKChatWhole(t *testing.T) {
	f := newSDKFixture(t, nil, nil)
	tests := []struct {
		name       string
		messages   []openai.ChatCompletionMessageParamUnion
		prompt     string // what the simulated model reads
		maxTokens  int64  // 0: not sent
		wantTokens int
		wantReason string
	}{
		{"one user message", []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
			"user: hi\n", 9, 9, "length"},
		{"system and user", []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("hi")},
			"system: be brief\nuser: hi\n", 4, 4, "length"},
		{"text parts are joined", []openai.ChatCompletionMessageParamUnion{openai.UserMessage(
			[]openai.ChatCompletionContentPartUnionParam{openai.TextContentPart("hi "), openai.TextContentPart("there")})},
			"user: hi there\n", 5, 5, "length"},
		{"natural end", []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
			"user: hi\n", 0, len(sim.Tokens(11, "user: hi\n")), "stop"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			params := openai.ChatCompletionNewParams{Model: "sim", Messages: tc.messages, Seed: openai.Int(11)}
			if tc.maxTokens > 0 {
				params.MaxTokens = openai.Int(tc.maxTokens)
			}
			resp, err := f.client.Chat.Completions.New(sdkContext(t), params)
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(resp.ID, "chatcmpl-"), resp.ID)
			assert.Equal(t, "chat.completion", string(resp.Object))
			assert.Equal(t, "sim", resp.Model)
			assert.Positive(t, resp.Created)
			require.Len(t, resp.Choices, 1)
			assert.Equal(t, "assistant", string(resp.Choices[0].Message.Role))
			assert.Equal(t, prefix(11, tc.prompt, tc.wantTokens), resp.Choices[0].Message.Content)
			assert.Equal(t, tc.wantReason, resp.Choices[0].FinishReason)
			assert.Equal(t, int64(sim.CountTokens(tc.prompt)), resp.Usage.PromptTokens)
			assert.Equal(t, int64(tc.wantTokens), resp.Usage.CompletionTokens)
			assert.Equal(t, resp.Usage.PromptTokens+resp.Usage.CompletionTokens, resp.Usage.TotalTokens)
		})
	}
}

// TestSDKStreamingEqualsWhole checks the text depends only on seed and
// prompt, streaming or not.
func TestSDKStreamingEqualsWhole(t *testing.T) {
	f := newSDKFixture(t, nil, nil)
	whole, err := f.client.Chat.Completions.New(sdkContext(t), chatParams("same", 5))
	require.NoError(t, err)
	acc, _ := streamChat(t, f, chatParams("same", 5))
	assert.Equal(t, whole.Choices[0].Message.Content, acc.Choices[0].Message.Content)
	assert.Equal(t, whole.Choices[0].FinishReason, acc.Choices[0].FinishReason)
	assert.Equal(t, sim.Text(5, userPrompt("same")), whole.Choices[0].Message.Content)
}

func TestSDKStopString(t *testing.T) {
	f := newSDKFixture(t, nil, nil)
	tokens := sim.Tokens(21, userPrompt("hi"))
	full := strings.Join(tokens, "")
	// A stop string that spans two tokens, so two engine callbacks.
	stop := spanningStop(tokens, 4)
	want := full[:strings.Index(full, stop)]
	require.NotEmpty(t, want)

	t.Run("streaming", func(t *testing.T) {
		params := chatParams("hi", 21)
		params.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{"never-there", stop}}
		acc, chunks := streamChat(t, f, params)
		assert.Equal(t, want, acc.Choices[0].Message.Content)
		assert.Equal(t, "stop", acc.Choices[0].FinishReason)
		for _, c := range chunks {
			for _, ch := range c.Choices {
				assert.NotContains(t, ch.Delta.Content, stop)
			}
		}
	})
	t.Run("whole", func(t *testing.T) {
		params := chatParams("hi", 21)
		params.Stop = openai.ChatCompletionNewParamsStopUnion{OfString: openai.String(stop)}
		resp, err := f.client.Chat.Completions.New(sdkContext(t), params)
		require.NoError(t, err)
		assert.Equal(t, want, resp.Choices[0].Message.Content)
		assert.Equal(t, "stop", resp.Choices[0].FinishReason)
		assert.Less(t, resp.Usage.CompletionTokens, int64(len(tokens)), "the engine stopped early")
	})
}

func TestSDKLegacyCompletions(t *testing.T) {
	f := newSDKFixture(t, nil, nil)
	params := openai.CompletionNewParams{
		Model:     "sim",
		Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
		MaxTokens: openai.Int(8),
		Seed:      openai.Int(2),
	}
	want := prefix(2, "Once upon a time", 8)

	t.Run("whole", func(t *testing.T) {
		resp, err := f.client.Completions.New(sdkContext(t), params)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(resp.ID, "cmpl-"), resp.ID)
		assert.Equal(t, "text_completion", string(resp.Object))
		require.Len(t, resp.Choices, 1)
		assert.Equal(t, want, resp.Choices[0].Text)
		assert.Equal(t, "length", string(resp.Choices[0].FinishReason))
		assert.Equal(t, int64(sim.CountTokens("Once upon a time")), resp.Usage.PromptTokens)
		assert.Equal(t, int64(8), resp.Usage.CompletionTokens)
		assert.Equal(t, resp.Usage.PromptTokens+8, resp.Usage.TotalTokens)
	})
	t.Run("streaming", func(t *testing.T) {
		p := params
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		stream := f.client.Completions.NewStreaming(sdkContext(t), p)
		defer stream.Close()
		var text strings.Builder
		var reasons []string
		var usage []openai.CompletionUsage
		for stream.Next() {
			c := stream.Current()
			assert.Equal(t, "text_completion", string(c.Object))
			assert.True(t, strings.HasPrefix(c.ID, "cmpl-"), c.ID)
			for _, ch := range c.Choices {
				text.WriteString(ch.Text)
				if ch.FinishReason != "" {
					reasons = append(reasons, string(ch.FinishReason))
				}
			}
			if c.JSON.Usage.Valid() {
				usage = append(usage, c.Usage)
			}
		}
		require.NoError(t, stream.Err())
		assert.Equal(t, want, text.String())
		assert.Equal(t, []string{"length"}, reasons)
		require.Len(t, usage, 1)
		assert.Equal(t, int64(8), usage[0].CompletionTokens)
	})
}

// modelsEngine is the simulated engine under other model names.
type modelsEngine struct {
	*sim.Engine
	models []npu.ModelInfo
}

func (e modelsEngine) Models() []npu.ModelInfo { return e.models }

func TestSDKModels(t *testing.T) {
	f := newSDKFixture(t, nil, nil)
	page, err := f.client.Models.List(sdkContext(t))
	require.NoError(t, err)
	require.Len(t, page.Data, 1)
	assert.Equal(t, "sim", page.Data[0].ID)
	assert.Equal(t, "model", string(page.Data[0].Object))
	assert.Equal(t, sim.OwnedBy, page.Data[0].OwnedBy)
	assert.Positive(t, page.Data[0].Created)

	m, err := f.client.Models.Get(sdkContext(t), "sim")
	require.NoError(t, err)
	assert.Equal(t, "sim", m.ID)
	assert.Equal(t, sim.OwnedBy, m.OwnedBy)

	_, err = f.client.Models.Get(sdkContext(t), "no-such-model")
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusNotFound, apiErr.StatusCode)
	assert.Equal(t, "model_not_found", apiErr.Code)
	assert.Equal(t, "model", apiErr.Param)
}

// TestSDKModelIDsWithSlashes: hub-style ids ("org/name") are listed, found
// and served, although the SDK escapes the slash in the path.
func TestSDKModelIDsWithSlashes(t *testing.T) {
	created := time.Unix(1700000000, 0)
	engine := modelsEngine{Engine: sim.New(sim.Config{}), models: []npu.ModelInfo{
		{ID: "OpenVINO/qwen-int4", OwnedBy: "a", Created: created, ContextLength: 4096},
		{ID: "plain", OwnedBy: "b", Created: created, ContextLength: 4096},
	}}
	f := sdkFixtureFor(t, daemontest.Start(t, daemontest.Defaults(t), engine))

	page, err := f.client.Models.List(sdkContext(t))
	require.NoError(t, err)
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	assert.Equal(t, []string{"OpenVINO/qwen-int4", "plain"}, ids)

	m, err := f.client.Models.Get(sdkContext(t), "OpenVINO/qwen-int4")
	require.NoError(t, err)
	assert.Equal(t, "OpenVINO/qwen-int4", m.ID)
	assert.Equal(t, "a", m.OwnedBy)
	assert.Equal(t, created.Unix(), m.Created)

	params := chatParams("hi", 1)
	params.Model = "OpenVINO/qwen-int4"
	params.MaxTokens = openai.Int(3)
	resp, err := f.client.Chat.Completions.New(sdkContext(t), params)
	require.NoError(t, err)
	assert.Equal(t, "OpenVINO/qwen-int4", resp.Model)
	assert.Equal(t, prefix(1, "user: hi\n", 3), resp.Choices[0].Message.Content)
}

func TestSDKErrorBeforeStream(t *testing.T) {
	f := newSDKFixture(t, nil, nil)
	tests := []struct {
		name   string
		mutate func(*openai.ChatCompletionNewParams)
		status int
		param  string
		code   string
	}{
		{"unknown model", func(p *openai.ChatCompletionNewParams) { p.Model = "no-such-model" }, 404, "model", "model_not_found"},
		{"temperature 3", func(p *openai.ChatCompletionNewParams) { p.Temperature = openai.Float(3) }, 400, "temperature", "invalid_value"},
		{"max_tokens 0", func(p *openai.ChatCompletionNewParams) { p.MaxTokens = openai.Int(0) }, 400, "max_tokens", "invalid_value"},
		{"n 9", func(p *openai.ChatCompletionNewParams) { p.N = openai.Int(9) }, 400, "n", "invalid_value"},
		{"logprobs", func(p *openai.ChatCompletionNewParams) { p.Logprobs = openai.Bool(true) }, 400, "logprobs", "unsupported_parameter"},
	}
	for _, tc := range tests {
		params := chatParams("hi", 1)
		tc.mutate(&params)
		check := func(t *testing.T, err error) {
			var apiErr *openai.Error
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, tc.status, apiErr.StatusCode)
			assert.Equal(t, tc.code, apiErr.Code)
			assert.Equal(t, tc.param, apiErr.Param)
			assert.NotEmpty(t, apiErr.Message)
		}
		t.Run(tc.name+"/streaming", func(t *testing.T) {
			stream := f.client.Chat.Completions.NewStreaming(sdkContext(t), params)
			defer stream.Close()
			assert.False(t, stream.Next())
			check(t, stream.Err())
		})
		t.Run(tc.name+"/whole", func(t *testing.T) {
			_, err := f.client.Chat.Completions.New(sdkContext(t), params)
			check(t, err)
		})
	}
}

func TestSDKErrorDuringStream(t *testing.T) {
	const failAt = 6
	f := newSDKFixture(t, nil, func(*npu.Request) sim.Fault { return sim.Fault{ErrorAtToken: failAt} })
	stream := f.client.Chat.Completions.NewStreaming(sdkContext(t), chatParams("hi", 4))
	defer stream.Close()
	var text strings.Builder
	for stream.Next() {
		if c := stream.Current(); len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Delta.Content)
			assert.Empty(t, c.Choices[0].FinishReason, "a failed stream has no finish chunk")
		}
	}
	err := stream.Err()
	require.Error(t, err, "an in-band error must reach the client as an error")
	var streamErr *ssestream.StreamError
	require.ErrorAs(t, err, &streamErr)
	assert.Contains(t, err.Error(), "simulated fault at token 6")
	assert.Contains(t, err.Error(), "engine_error")
	assert.Equal(t, prefix(4, "user: hi\n", failAt-1), text.String(), "the text before the failure is delivered")

	// Not streaming, the same failure is a real HTTP 500.
	_, err = f.client.Chat.Completions.New(sdkContext(t), chatParams("hi", 4))
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusInternalServerError, apiErr.StatusCode)
	assert.Equal(t, "engine_error", apiErr.Code)
}

func TestSDKQueueFullIs503WithRetryAfter(t *testing.T) {
	f := newSDKFixture(t, func(c *daemon.Config) { c.MaxQueue = 0 }, hogFaults(nil))
	release := startHog(t, f.http, f.srv.URL)

	check := func(t *testing.T, err error) {
		var apiErr *openai.Error
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, http.StatusServiceUnavailable, apiErr.StatusCode)
		assert.Equal(t, "queue_full", apiErr.Code)
		require.NotNil(t, apiErr.Response)
		secs, err := strconv.Atoi(apiErr.Response.Header.Get("Retry-After"))
		require.NoError(t, err, "Retry-After is whole seconds")
		assert.True(t, secs >= 1 && secs <= 60, "Retry-After %d is within what clients honour", secs)
	}
	t.Run("whole", func(t *testing.T) {
		_, err := f.client.Chat.Completions.New(sdkContext(t), chatParams("hi", 1))
		check(t, err)
	})
	t.Run("streaming", func(t *testing.T) {
		stream := f.client.Chat.Completions.NewStreaming(sdkContext(t), chatParams("hi", 1))
		defer stream.Close()
		assert.False(t, stream.Next())
		check(t, stream.Err())
	})

	release()
	waitFor(t, func() bool { return activeStreams(t, f.http, f.srv.URL) == 0 })
	resp, err := f.client.Chat.Completions.New(sdkContext(t), chatParams("hi", 1))
	require.NoError(t, err, "the slot serves the next request once the stalled one is gone")
	assert.Equal(t, sim.Text(1, "user: hi\n"), resp.Choices[0].Message.Content)
}

// TestSDKClientDisconnectMidStreamFreesTheEngine: a client that cancels
// after the first content chunk frees the engine's slot; the engine is
// told to cancel (it cannot end on its own: it stalls until then).
func TestSDKClientDisconnectMidStreamFreesTheEngine(t *testing.T) {
	cfg := daemontest.Defaults(t)
	engine := &nputest.RecordingEngine{Engine: sim.New(sim.Config{TTFT: cfg.SimTTFT, ITL: cfg.SimITL, Faults: hogFaults(nil)})}
	f := sdkFixtureFor(t, daemontest.Start(t, cfg, engine))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream := f.client.Chat.Completions.NewStreaming(ctx, chatParams(hogContent, 1))
	var got string
	for stream.Next() {
		if c := stream.Current(); len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
			got = c.Choices[0].Delta.Content
			assert.EqualValues(t, 1, activeStreams(t, f.http, f.srv.URL), "the stream holds the engine")
			cancel()
			break
		}
	}
	assert.False(t, stream.Next(), "a cancelled stream ends")
	require.NoError(t, stream.Close())
	assert.Equal(t, prefix(1, userPrompt(hogContent), 1), got)

	waitFor(t, func() bool { return activeStreams(t, f.http, f.srv.URL) == 0 })
	assert.Zero(t, queued(t, f.http, f.srv.URL))
	waitFor(t, func() bool {
		st := engine.Statuses()
		return len(st) > 0 && st[len(st)-1] == npu.Cancel
	})

	resp, err := f.client.Chat.Completions.New(sdkContext(t), chatParams("hi", 2))
	require.NoError(t, err, "the next request gets the engine")
	assert.Equal(t, sim.Text(2, "user: hi\n"), resp.Choices[0].Message.Content)
	assert.Equal(t, "stop", resp.Choices[0].FinishReason)
}

// Issue 18: a turn that continues the conversation the engine's cache
// holds prefills only its new tokens; usage says how many came from the
// cache, in OpenAI's prompt_tokens_details.cached_tokens, which the SDK
// reads.
func TestSDKCachedTokensOfAContinuedConversation(t *testing.T) {
	f := newSDKFixture(t, nil, nil)
	first := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("tell me about the npu")}
	one, err := f.client.Chat.Completions.New(sdkContext(t), openai.ChatCompletionNewParams{Model: "sim", Messages: first, MaxTokens: openai.Int(8), Seed: openai.Int(1)})
	require.NoError(t, err)
	assert.Zero(t, one.Usage.PromptTokensDetails.CachedTokens, "nothing was cached yet")

	next := append(first, openai.AssistantMessage(one.Choices[0].Message.Content), openai.UserMessage("and then?"))
	two, err := f.client.Chat.Completions.New(sdkContext(t), openai.ChatCompletionNewParams{Model: "sim", Messages: next, MaxTokens: openai.Int(8), Seed: openai.Int(1)})
	require.NoError(t, err)
	cached := two.Usage.PromptTokensDetails.CachedTokens
	assert.Positive(t, cached, "the earlier turns came from the cache")
	assert.Less(t, cached, two.Usage.PromptTokens, "the new turn was prefilled")

	other, err := f.client.Chat.Completions.New(sdkContext(t), chatParams("a different conversation", 1))
	require.NoError(t, err)
	assert.Zero(t, other.Usage.PromptTokensDetails.CachedTokens, "another conversation resets the cache")
}

// Issue 16: with reasoning_effort the model's reasoning streams in
// delta.reasoning_content (as vLLM and DeepSeek send it) and comes whole in
// message.reasoning_content; content holds the answer alone, the same
// through openai-go's accumulator as in the whole response.
func TestSDKReasoningComesApart(t *testing.T) {
	f := newSDKFixture(t, nil, nil)
	params := chatParams("why is the sky blue", 11)
	params.ReasoningEffort = shared.ReasoningEffortMedium
	thoughts := sim.Reasoning(11, userPrompt("why is the sky blue"))
	wantReasoning := strings.TrimSpace(strings.Join(thoughts[1:len(thoughts)-2], ""))
	wantAnswer := strings.TrimLeft(sim.Text(11, userPrompt("why is the sky blue")), " \n")

	acc, chunks := streamChat(t, f, params)
	var reasoning strings.Builder
	for _, c := range chunks {
		for _, ch := range c.Choices {
			if r, ok := ch.Delta.JSON.ExtraFields["reasoning_content"]; ok {
				var s string
				require.NoError(t, json.Unmarshal([]byte(r.Raw()), &s))
				reasoning.WriteString(s)
			}
		}
	}
	assert.Equal(t, wantReasoning, reasoning.String())
	assert.Equal(t, wantAnswer, acc.Choices[0].Message.Content, "no reasoning in content")
	assert.NotContains(t, acc.Choices[0].Message.Content, "<think>")

	whole, err := f.client.Chat.Completions.New(sdkContext(t), params)
	require.NoError(t, err)
	assert.Equal(t, acc.Choices[0].Message.Content, whole.Choices[0].Message.Content, "the stream reassembles into the whole answer")
	var wholeReasoning string
	require.NoError(t, json.Unmarshal([]byte(whole.Choices[0].Message.JSON.ExtraFields["reasoning_content"].Raw()), &wholeReasoning))
	assert.Equal(t, wantReasoning, wholeReasoning)

	// Without reasoning_effort the model answers straight away.
	plain, err := f.client.Chat.Completions.New(sdkContext(t), chatParams("why is the sky blue", 11))
	require.NoError(t, err)
	assert.Equal(t, sim.Text(11, userPrompt("why is the sky blue")), plain.Choices[0].Message.Content)
	_, ok := plain.Choices[0].Message.JSON.ExtraFields["reasoning_content"]
	assert.False(t, ok)

	// A value OpenAI does not define is a 400 naming the parameter.
	resp, raw := daemontest.NewClient(t, f.srv.URL).Do(t, http.MethodPost, "/v1/chat/completions",
		`{"model":"sim","reasoning_effort":"extreme","messages":[{"role":"user","content":"x"}]}`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(raw), `"param":"reasoning_effort"`)
}
