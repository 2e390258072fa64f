package ollamaapi_test

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/types/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
)

const weatherToolJSON = `{"type":"function","function":{"name":"get_weather","description":"The weather in a city",
	"parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}}}`

// Issue 16: the Ollama Go client's tool path on the engine under test, an
// agent loop: the call comes whole with its arguments as an object, in
// the stream and in the whole answer; the tool message (tool_name) goes
// back; the model answers.
func TestOllamaGoClientToolLoop(t *testing.T) {
	srv := daemontest.StartEngine(t, nil, nil)
	base, err := url.Parse(srv.URL)
	require.NoError(t, err)
	client := api.NewClient(base, &http.Client{})
	ctx := testContext(t)
	var tool api.Tool
	require.NoError(t, json.Unmarshal([]byte(weatherToolJSON), &tool))

	messages := []api.Message{{Role: "user", Content: "What is the weather in Oslo?"}}
	req := &api.ChatRequest{Model: "sim", Messages: messages, Tools: api.Tools{tool}, Options: map[string]any{"seed": 4}}
	var calls []api.ToolCall
	var content string
	var final api.ChatResponse
	require.NoError(t, client.Chat(ctx, req, func(r api.ChatResponse) error {
		calls = append(calls, r.Message.ToolCalls...)
		content += r.Message.Content
		if r.Done {
			final = r
		}
		return nil
	}))
	require.Len(t, calls, 1)
	assert.Empty(t, content, "no piece of the call leaked as content")
	assert.Equal(t, "stop", final.DoneReason)
	assert.Equal(t, "get_weather", calls[0].Function.Name)
	city, ok := calls[0].Function.Arguments.Get("city")
	require.True(t, ok, "arguments %s", calls[0].Function.Arguments.String())
	assert.IsType(t, "", city)

	stream := false
	req.Stream = &stream
	var whole api.ChatResponse
	require.NoError(t, client.Chat(ctx, req, func(r api.ChatResponse) error { whole = r; return nil }))
	require.Len(t, whole.Message.ToolCalls, 1)
	assert.Equal(t, calls[0].Function.Name, whole.Message.ToolCalls[0].Function.Name)
	assert.JSONEq(t, calls[0].Function.Arguments.String(), whole.Message.ToolCalls[0].Function.Arguments.String())

	req.Messages = append(messages,
		api.Message{Role: "assistant", ToolCalls: calls},
		api.Message{Role: "tool", ToolName: "get_weather", Content: "sunny"})
	var answer api.ChatResponse
	require.NoError(t, client.Chat(ctx, req, func(r api.ChatResponse) error { answer = r; return nil }))
	assert.Empty(t, answer.Message.ToolCalls)
	assert.NotEmpty(t, answer.Message.Content)

	show, err := client.Show(ctx, &api.ShowRequest{Model: "sim"})
	require.NoError(t, err)
	assert.Contains(t, show.Capabilities, model.CapabilityTools)
	assert.NotContains(t, show.Capabilities, model.CapabilityEmbedding)
}

// Issue 16: Ollama's images (base64) through the Go client reach the model
// as decoded pictures, on chat and generate.
func TestOllamaGoClientImages(t *testing.T) {
	f := newClientFixture(t, nil, nil)
	ctx := testContext(t)
	img := image.NewGray(image.Rect(0, 0, 3, 2))
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	stream := false
	var chat api.ChatResponse
	require.NoError(t, f.client.Chat(ctx, &api.ChatRequest{Model: "sim", Stream: &stream,
		Messages: []api.Message{{Role: "user", Content: "what is this?", Images: []api.ImageData{b.Bytes()}}}},
		func(r api.ChatResponse) error { chat = r; return nil }))
	assert.True(t, strings.HasPrefix(chat.Message.Content, "I see an image of 3x2 pixels."), chat.Message.Content)

	var gen api.GenerateResponse
	require.NoError(t, f.client.Generate(ctx, &api.GenerateRequest{Model: "sim", Stream: &stream, Prompt: "and this?",
		Images: []api.ImageData{b.Bytes(), b.Bytes()}}, func(r api.GenerateResponse) error { gen = r; return nil }))
	assert.True(t, strings.HasPrefix(gen.Response, "I see 2 images of 3x2, 3x2 pixels."), gen.Response)

	err := f.client.Chat(ctx, &api.ChatRequest{Model: "sim", Stream: &stream,
		Messages: []api.Message{{Role: "user", Content: "x", Images: []api.ImageData{[]byte("GIF89a")}}}},
		func(api.ChatResponse) error { return nil })
	var statusErr api.StatusError
	require.ErrorAs(t, err, &statusErr)
	assert.Equal(t, http.StatusBadRequest, statusErr.StatusCode)
	assert.Contains(t, statusErr.ErrorMessage, "messages[0].images[0]")
}
