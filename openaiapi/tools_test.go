package openaiapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
)

func weatherTool() openai.ChatCompletionToolUnionParam {
	return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name:        "get_weather",
		Description: openai.String("The weather in a city"),
		Parameters: shared.FunctionParameters{
			"type": "object",
			"properties": map[string]any{
				"city": map[string]any{"type": "string"},
				"days": map[string]any{"type": "integer", "minimum": 1, "maximum": 7},
			},
			"required": []string{"city"},
		},
	})
}

func toolParams(content string) openai.ChatCompletionNewParams {
	p := chatParams(content, 7)
	p.Tools = []openai.ChatCompletionToolUnionParam{weatherTool()}
	return p
}

// checkWeatherArgs: the arguments are a JSON object with the required
// string argument (clients validate against the schema).
func checkWeatherArgs(t *testing.T, args string) {
	t.Helper()
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(args), &got), "arguments %q", args)
	assert.IsType(t, "", got["city"], "arguments %q", args)
}

// Issue 16: an agent loop through openai-go on the engine under test
// (the simulator, or OpenVINO through the test library): the streamed
// tool-call deltas reassemble in the SDK's accumulator into the calls of
// the whole response; the second turn, with the tool's result, answers.
func TestOpenAIGoToolLoop(t *testing.T) {
	f := sdkFixtureFor(t, daemontest.StartEngine(t, nil, nil))
	params := toolParams("What is the weather in Paris?")

	acc, chunks := streamChat(t, f, params)
	require.Len(t, acc.Choices, 1)
	streamed := acc.Choices[0]
	assert.Equal(t, "tool_calls", streamed.FinishReason)
	require.NotEmpty(t, streamed.Message.ToolCalls)
	assert.Empty(t, streamed.Message.Content, "no piece of the call leaked as content")
	first := map[int64]bool{}
	for _, ch := range chunks {
		for _, ch := range ch.Choices {
			assert.NotContains(t, ch.Delta.Content, "tool_call")
			for _, d := range ch.Delta.ToolCalls {
				if !first[d.Index] {
					first[d.Index] = true
					assert.NotEmpty(t, d.ID, "the first piece of a call carries its id")
					assert.Equal(t, "function", d.Type)
					assert.Equal(t, "get_weather", d.Function.Name)
				} else {
					assert.Empty(t, d.ID, "only the first piece carries the id")
					assert.Empty(t, d.Function.Name)
				}
			}
		}
	}
	for _, c := range streamed.Message.ToolCalls {
		assert.Equal(t, "get_weather", c.Function.Name)
		checkWeatherArgs(t, c.Function.Arguments)
	}

	whole, err := f.client.Chat.Completions.New(sdkContext(t), params)
	require.NoError(t, err)
	require.Len(t, whole.Choices, 1)
	assert.Equal(t, "tool_calls", whole.Choices[0].FinishReason)
	require.Len(t, whole.Choices[0].Message.ToolCalls, len(streamed.Message.ToolCalls))
	for i, c := range whole.Choices[0].Message.ToolCalls {
		assert.Equal(t, streamed.Message.ToolCalls[i].Function.Name, c.Function.Name)
		assert.JSONEq(t, streamed.Message.ToolCalls[i].Function.Arguments, c.Function.Arguments,
			"the stream reassembles into the whole response's call")
		assert.NotEqual(t, streamed.Message.ToolCalls[i].ID, c.ID, "each call has an id of its own")
	}
	assert.Contains(t, whole.Choices[0].Message.RawJSON(), `"content":null`, "an answer of only calls has null content")

	// The second turn: the call and the tool's result.
	call := streamed.Message.ToolCalls[0]
	params.Messages = append(params.Messages, streamed.Message.ToParam(), openai.ToolMessage("18°C and sunny", call.ID))
	acc2, _ := streamChat(t, f, params)
	require.Len(t, acc2.Choices, 1)
	assert.Equal(t, "stop", acc2.Choices[0].FinishReason)
	assert.Empty(t, acc2.Choices[0].Message.ToolCalls)
	assert.NotEmpty(t, acc2.Choices[0].Message.Content, "the model answers with the tool's result")
}

func TestOpenAIToolChoice(t *testing.T) {
	f := sdkFixtureFor(t, daemontest.StartEngine(t, nil, nil))
	ctx := sdkContext(t)

	none := toolParams("What is the weather in Paris?")
	none.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("none")}
	out, err := f.client.Chat.Completions.New(ctx, none)
	require.NoError(t, err)
	assert.Equal(t, "stop", out.Choices[0].FinishReason)
	assert.Empty(t, out.Choices[0].Message.ToolCalls, "tool_choice none: the model is not told of the tools")
	assert.NotEmpty(t, out.Choices[0].Message.Content)

	named := toolParams("What time is it?")
	named.Tools = append(named.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_time"}))
	named.ToolChoice = openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_time"})
	named.ParallelToolCalls = openai.Bool(false)
	acc, _ := streamChat(t, f, named)
	require.Len(t, acc.Choices[0].Message.ToolCalls, 1, "parallel_tool_calls false: one call")
	assert.Equal(t, "get_time", acc.Choices[0].Message.ToolCalls[0].Function.Name)
	assert.Equal(t, "tool_calls", acc.Choices[0].FinishReason)
}

// The raw wire: OpenAI's exact chunk shapes, checked without a client's
// leniency.
func TestToolCallChunksOnTheWire(t *testing.T) {
	srv := daemontest.StartEngine(t, nil, nil)
	c := daemontest.NewClient(t, srv.URL)
	body := `{"model":"sim","stream":true,"seed":7,"messages":[{"role":"user","content":"weather?"}],` +
		`"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]}`
	resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions", body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	var sawHeader, sawFinish bool
	for _, line := range strings.Split(string(raw), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta        map[string]json.RawMessage `json:"delta"`
				FinishReason *string                    `json:"finish_reason"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(data), &chunk), data)
		for _, ch := range chunk.Choices {
			if calls, ok := ch.Delta["tool_calls"]; ok {
				var deltas []map[string]any
				require.NoError(t, json.Unmarshal(calls, &deltas))
				for _, d := range deltas {
					assert.Contains(t, d, "index")
					if _, ok := d["id"]; ok {
						sawHeader = true
						assert.Equal(t, "function", d["type"])
						fn := d["function"].(map[string]any)
						assert.Equal(t, "get_weather", fn["name"])
						assert.Contains(t, fn, "arguments")
					}
				}
			}
			if ch.FinishReason != nil {
				sawFinish = true
				assert.Equal(t, "tool_calls", *ch.FinishReason)
			}
		}
	}
	assert.True(t, sawHeader)
	assert.True(t, sawFinish)
	assert.True(t, strings.HasSuffix(string(raw), "data: [DONE]\n\n"))
}

// Issue 27: a tool call cut by max_tokens before its name leaked the
// template's markup as content ("<tool_call>\n{\"name" with
// finish_reason length). The partial call is dropped (the access log
// reports it): no markup, no call, finish_reason length.
func TestToolCallCutByMaxTokensLeaksNoMarkup(t *testing.T) {
	daemontest.SimOnly(t, "the simulated model's call markup, cut at a known token")
	c := daemontest.NewClient(t, daemontest.StartSim(t, nil, nil).URL)
	const tools = `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
	type message struct {
		Content   *string           `json:"content"`
		ToolCalls []json.RawMessage `json:"tool_calls"`
	}
	type chunk struct {
		Choices []struct {
			Message      *message `json:"message"`
			Delta        *message `json:"delta"`
			FinishReason *string  `json:"finish_reason"`
		} `json:"choices"`
	}
	// The simulated call is "<tool_call>\n{\"name\": \"get_weather\", …" in
	// tokens of one to five characters: 2 tokens end inside the opener, 8
	// after it, before the name is whole.
	for _, maxTokens := range []int{2, 8} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("max_tokens=%d,stream=%v", maxTokens, stream), func(t *testing.T) {
				body := fmt.Sprintf(`{"model":"sim","stream":%v,"max_tokens":%d,%s,"messages":[{"role":"user","content":"What is the weather in Paris?"}]}`,
					stream, maxTokens, tools)
				resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions", body)
				require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
				bodies := []string{string(raw)}
				if stream {
					bodies = nil
					for _, ev := range splitEvents(t, raw) {
						if !ev.comment && ev.data != "[DONE]" {
							bodies = append(bodies, ev.data)
						}
					}
				}
				var content strings.Builder
				var calls int
				var reason string
				for _, b := range bodies {
					var ch chunk
					require.NoError(t, json.Unmarshal([]byte(b), &ch), "%s", b)
					for _, c := range ch.Choices {
						for _, m := range []*message{c.Message, c.Delta} {
							if m != nil && m.Content != nil {
								content.WriteString(*m.Content)
							}
							if m != nil {
								calls += len(m.ToolCalls)
							}
						}
						if c.FinishReason != nil {
							reason = *c.FinishReason
						}
					}
				}
				assert.Empty(t, content.String(), "no template markup shown as text")
				assert.Zero(t, calls, "no call comes of it")
				assert.Equal(t, "length", reason)
			})
		}
	}
}
