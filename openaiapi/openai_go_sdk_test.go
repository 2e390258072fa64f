package openaiapi_test

import (
	"context"
	"net/http"
	"strings"
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

// sdkFixture is a real npud on loopback and an official OpenAI Go client
// pointed at it.
type sdkFixture struct {
	srv    *daemontest.Server
	client openai.Client
	http   *http.Client
}

func newSDKFixture(t *testing.T, mutate func(*daemon.Config), faults func(*npu.Request) sim.Fault) *sdkFixture {
	t.Helper()
	srv := daemontest.StartSim(t, mutate, faults)
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	hc := &http.Client{Transport: transport}
	client := openai.NewClient(
		option.WithBaseURL(srv.URL+"/v1/"),
		option.WithAPIKey("unused"),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	)
	return &sdkFixture{srv: srv, client: client, http: hc}
}

// userPrompt is the text the simulated model reads for one user message.
func userPrompt(content string) string { return "user: " + content + "\n" }

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

func TestSDKChatStreaming(t *testing.T) {
	f := newSDKFixture(t, nil, nil)
	tokens := sim.Tokens(7, userPrompt("hello"))
	require.Greater(t, len(tokens), 10)

	tests := []struct {
		name       string
		maxTokens  int64
		wantText   string
		wantReason string
	}{
		{"natural end", 0, strings.Join(tokens, ""), "stop"},
		{"max_tokens cuts it", 5, strings.Join(tokens[:5], ""), "length"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			params := chatParams("hello", 7)
			if tc.maxTokens > 0 {
				params.MaxTokens = openai.Int(tc.maxTokens)
			}
			stream := f.client.Chat.Completions.NewStreaming(sdkContext(t), params)
			var acc openai.ChatCompletionAccumulator
			var ids []string
			for stream.Next() {
				chunk := stream.Current()
				acc.AddChunk(chunk)
				ids = append(ids, chunk.ID)
			}
			require.NoError(t, stream.Err())
			require.NoError(t, stream.Close())
			require.Len(t, acc.Choices, 1)
			assert.Equal(t, tc.wantText, acc.Choices[0].Message.Content)
			assert.Equal(t, tc.wantReason, acc.Choices[0].FinishReason)
			for _, id := range ids {
				assert.Equal(t, ids[0], id, "every chunk has the same id")
			}
			assert.True(t, strings.HasPrefix(ids[0], "chatcmpl-"))
			assert.Zero(t, acc.Usage.TotalTokens, "no usage chunk unless asked")
		})
	}
}

func TestSDKChatStreamingIncludeUsage(t *testing.T) {
	f := newSDKFixture(t, nil, nil)
	params := chatParams("count me", 3)
	params.MaxTokens = openai.Int(6)
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := f.client.Chat.Completions.NewStreaming(sdkContext(t), params)
	var acc openai.ChatCompletionAccumulator
	usageChunks := 0
	for stream.Next() {
		chunk := stream.Current()
		acc.AddChunk(chunk)
		if chunk.JSON.Usage.Valid() && chunk.Usage.TotalTokens > 0 {
			usageChunks++
			assert.Empty(t, chunk.Choices, "the usage chunk has no choices")
		}
	}
	require.NoError(t, stream.Err())
	assert.Equal(t, 1, usageChunks)
	assert.Equal(t, int64(sim.CountTokens(userPrompt("count me"))), acc.Usage.PromptTokens)
	assert.Equal(t, int64(6), acc.Usage.CompletionTokens)
	assert.Equal(t, acc.Usage.PromptTokens+6, acc.Usage.TotalTokens)
}

func TestSDKChatWhole(t *testing.T) {
	f := newSDKFixture(t, nil, nil)
	params := chatParams("whole", 11)
	params.MaxTokens = openai.Int(9)
	resp, err := f.client.Chat.Completions.New(sdkContext(t), params)
	require.NoError(t, err)
	require.Len(t, resp.Choices, 1)
	assert.Equal(t, "chat.completion", string(resp.Object))
	assert.Equal(t, "assistant", string(resp.Choices[0].Message.Role))
	assert.Equal(t, strings.Join(sim.Tokens(11, userPrompt("whole"))[:9], ""), resp.Choices[0].Message.Content)
	assert.Equal(t, "length", resp.Choices[0].FinishReason)
	assert.Equal(t, int64(sim.CountTokens(userPrompt("whole"))), resp.Usage.PromptTokens)
	assert.Equal(t, int64(9), resp.Usage.CompletionTokens)
}

// TestSDKStreamingEqualsWhole checks the text depends only on seed and
// prompt, streaming or not.
func TestSDKStreamingEqualsWhole(t *testing.T) {
	f := newSDKFixture(t, nil, nil)
	whole, err := f.client.Chat.Completions.New(sdkContext(t), chatParams("same", 5))
	require.NoError(t, err)
	stream := f.client.Chat.Completions.NewStreaming(sdkContext(t), chatParams("same", 5))
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	require.NoError(t, stream.Err())
	assert.Equal(t, whole.Choices[0].Message.Content, acc.Choices[0].Message.Content)
	assert.Equal(t, whole.Choices[0].FinishReason, acc.Choices[0].FinishReason)
	assert.Equal(t, sim.Text(5, userPrompt("same")), whole.Choices[0].Message.Content)
}

func TestSDKStopString(t *testing.T) {
	f := newSDKFixture(t, nil, nil)
	tokens := sim.Tokens(21, userPrompt("stop me"))
	full := strings.Join(tokens, "")
	// A stop string that spans two tokens: the end of token 4 and the start
	// of token 5, so it is split across engine callbacks.
	stop := spanningStop(tokens, 4)
	want := full[:strings.Index(full, stop)]

	t.Run("streaming", func(t *testing.T) {
		params := chatParams("stop me", 21)
		params.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{"never-there", stop}}
		stream := f.client.Chat.Completions.NewStreaming(sdkContext(t), params)
		var acc openai.ChatCompletionAccumulator
		var pieces []string
		for stream.Next() {
			chunk := stream.Current()
			acc.AddChunk(chunk)
			if len(chunk.Choices) > 0 {
				pieces = append(pieces, chunk.Choices[0].Delta.Content)
			}
		}
		require.NoError(t, stream.Err())
		assert.Equal(t, want, acc.Choices[0].Message.Content)
		assert.Equal(t, "stop", acc.Choices[0].FinishReason)
		assert.NotContains(t, strings.Join(pieces, ""), stop)
	})
	t.Run("whole", func(t *testing.T) {
		params := chatParams("stop me", 21)
		params.Stop = openai.ChatCompletionNewParamsStopUnion{OfString: openai.String(stop)}
		resp, err := f.client.Chat.Completions.New(sdkContext(t), params)
		require.NoError(t, err)
		assert.Equal(t, want, resp.Choices[0].Message.Content)
		assert.Equal(t, "stop", resp.Choices[0].FinishReason)
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
	want := strings.Join(sim.Tokens(2, "Once upon a time")[:8], "")

	resp, err := f.client.Completions.New(sdkContext(t), params)
	require.NoError(t, err)
	assert.Equal(t, want, resp.Choices[0].Text)
	assert.Equal(t, "length", string(resp.Choices[0].FinishReason))
	assert.Equal(t, "text_completion", string(resp.Object))

	stream := f.client.Completions.NewStreaming(sdkContext(t), params)
	var text strings.Builder
	var reasons []string
	for stream.Next() {
		c := stream.Current()
		assert.Equal(t, "text_completion", string(c.Object))
		for _, ch := range c.Choices {
			text.WriteString(ch.Text)
			if ch.FinishReason != "" {
				reasons = append(reasons, string(ch.FinishReason))
			}
		}
	}
	require.NoError(t, stream.Err())
	assert.Equal(t, want, text.String())
	assert.Equal(t, []string{"length"}, reasons)
}

func TestSDKModels(t *testing.T) {
	f := newSDKFixture(t, nil, nil)
	page, err := f.client.Models.List(sdkContext(t))
	require.NoError(t, err)
	require.Len(t, page.Data, 1)
	assert.Equal(t, "sim", page.Data[0].ID)
	assert.Equal(t, sim.OwnedBy, page.Data[0].OwnedBy)

	m, err := f.client.Models.Get(sdkContext(t), "sim")
	require.NoError(t, err)
	assert.Equal(t, "sim", m.ID)

	_, err = f.client.Models.Get(sdkContext(t), "no-such-model")
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusNotFound, apiErr.StatusCode)
	assert.Equal(t, "model_not_found", apiErr.Code)
}

func TestSDKErrorBeforeStream(t *testing.T) {
	f := newSDKFixture(t, nil, nil)
	params := chatParams("hi", 1)
	params.Model = "no-such-model"
	stream := f.client.Chat.Completions.NewStreaming(sdkContext(t), params)
	assert.False(t, stream.Next())
	var apiErr *openai.Error
	require.ErrorAs(t, stream.Err(), &apiErr)
	assert.Equal(t, http.StatusNotFound, apiErr.StatusCode)
	assert.Equal(t, "model_not_found", apiErr.Code)
	assert.Equal(t, "model", apiErr.Param)

	params = chatParams("hi", 1)
	params.Temperature = openai.Float(3)
	_, err := f.client.Chat.Completions.New(sdkContext(t), params)
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
	assert.Equal(t, "temperature", apiErr.Param)
}

func TestSDKErrorDuringStream(t *testing.T) {
	const failAt = 6
	f := newSDKFixture(t, nil, func(*npu.Request) sim.Fault { return sim.Fault{ErrorAtToken: failAt} })
	stream := f.client.Chat.Completions.NewStreaming(sdkContext(t), chatParams("boom", 4))
	var text strings.Builder
	for stream.Next() {
		if c := stream.Current(); len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Delta.Content)
			assert.Empty(t, c.Choices[0].FinishReason, "a failed stream has no finish chunk")
		}
	}
	err := stream.Err()
	require.Error(t, err, "an in-band error must reach the client as an error")
	assert.Contains(t, err.Error(), "simulated fault")
	assert.Equal(t, strings.Join(sim.Tokens(4, userPrompt("boom"))[:failAt-1], ""), text.String(),
		"the text before the failure is delivered")

	// Not streaming, the same failure is a real HTTP 500.
	_, err = f.client.Chat.Completions.New(sdkContext(t), chatParams("boom", 4))
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusInternalServerError, apiErr.StatusCode)
	assert.Equal(t, "engine_error", apiErr.Code)
}

func TestSDKQueueFullIs503WithRetryAfter(t *testing.T) {
	// A short heartbeat commits the stalled stream's headers, which is when
	// the SDK's NewStreaming returns.
	f := newSDKFixture(t, func(c *daemon.Config) { c.MaxQueue, c.Heartbeat = 0, 50*time.Millisecond },
		func(r *npu.Request) sim.Fault {
			if r.Messages[0].Content == "hog" {
				return sim.Fault{StallAtToken: 1}
			}
			return sim.Fault{}
		})
	hogCtx, stopHog := context.WithCancel(context.Background())
	defer stopHog()
	hog := f.client.Chat.Completions.NewStreaming(hogCtx, chatParams("hog", 1))
	defer hog.Close()
	waitFor(t, func() bool { return activeStreams(t, f.http, f.srv.URL) == 1 })

	var resp *http.Response
	_, err := f.client.Chat.Completions.New(sdkContext(t), chatParams("hi", 1), option.WithResponseInto(&resp))
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusServiceUnavailable, apiErr.StatusCode)
	assert.Equal(t, "queue_full", apiErr.Code)
	require.NotNil(t, apiErr.Response)
	assert.NotEmpty(t, apiErr.Response.Header.Get("Retry-After"))

	stopHog()
	waitFor(t, func() bool { return activeStreams(t, f.http, f.srv.URL) == 0 })
	_, err = f.client.Chat.Completions.New(sdkContext(t), chatParams("hi", 1))
	require.NoError(t, err, "the slot serves the next request once the stalled one is cancelled")
}
