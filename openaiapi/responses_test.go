package openaiapi_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/sim"
)

func responseParams(input string) responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model: "sim",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(input)},
	}
}

func weatherFunction() responses.ToolUnionParam {
	return responses.ToolParamOfFunction("get_weather", map[string]any{
		"type":       "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}},
		"required":   []string{"city"},
	}, false)
}

// streamResponse reads a whole Responses stream through openai-go and
// checks what every stream must be: sequence numbers from 0 with no gap,
// response.created and .in_progress first, one terminal event last.
func streamResponse(t *testing.T, f *sdkFixture, params responses.ResponseNewParams) ([]responses.ResponseStreamEventUnion, responses.Response) {
	t.Helper()
	stream := f.client.Responses.NewStreaming(sdkContext(t), params)
	defer stream.Close()
	var events []responses.ResponseStreamEventUnion
	for stream.Next() {
		events = append(events, stream.Current())
	}
	require.NoError(t, stream.Err())
	require.GreaterOrEqual(t, len(events), 3)
	for i, ev := range events {
		assert.Equal(t, int64(i), ev.SequenceNumber, "event %d (%s) is numbered in order", i, ev.Type)
	}
	assert.Equal(t, "response.created", events[0].Type)
	assert.Equal(t, "response.in_progress", events[1].Type)
	last := events[len(events)-1]
	assert.Contains(t, []string{"response.completed", "response.incomplete", "response.failed"}, last.Type)
	return events, last.Response
}

func TestResponsesWholeAndStreamed(t *testing.T) {
	f := newSDKFixture(t, nil, nil)
	natural := len(sim.Tokens(0, userPrompt("hi")))

	whole, err := f.client.Responses.New(sdkContext(t), responseParams("hi"))
	require.NoError(t, err)
	assert.Equal(t, responses.ResponseStatusCompleted, whole.Status)
	assert.True(t, strings.HasPrefix(whole.ID, "resp_"), whole.ID)
	assert.Equal(t, prefix(0, userPrompt("hi"), 0), whole.OutputText())
	require.Len(t, whole.Output, 1)
	assert.Equal(t, "message", whole.Output[0].Type)
	assert.Equal(t, int64(natural), whole.Usage.OutputTokens)
	assert.Equal(t, int64(sim.CountTokens(userPrompt("hi"))), whole.Usage.InputTokens)
	assert.Equal(t, whole.Usage.InputTokens+whole.Usage.OutputTokens, whole.Usage.TotalTokens)

	events, final := streamResponse(t, f, responseParams("hi"))
	var deltas strings.Builder
	var types []string
	for _, ev := range events {
		if ev.Type == "response.output_text.delta" {
			deltas.WriteString(ev.Delta)
			continue
		}
		types = append(types, ev.Type)
	}
	assert.Equal(t, []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}, types)
	assert.Equal(t, whole.OutputText(), deltas.String())
	assert.Equal(t, whole.OutputText(), final.OutputText())
	assert.Equal(t, responses.ResponseStatusCompleted, final.Status)
	assert.Equal(t, whole.Usage.OutputTokens, final.Usage.OutputTokens)
}

func TestResponsesMaxOutputTokensIsIncomplete(t *testing.T) {
	f := newSDKFixture(t, nil, nil)
	params := responseParams("hi")
	params.MaxOutputTokens = openai.Int(3)
	whole, err := f.client.Responses.New(sdkContext(t), params)
	require.NoError(t, err)
	assert.Equal(t, responses.ResponseStatusIncomplete, whole.Status)
	assert.Equal(t, "max_output_tokens", whole.IncompleteDetails.Reason)
	assert.Equal(t, prefix(0, userPrompt("hi"), 3), whole.OutputText())

	events, final := streamResponse(t, f, params)
	assert.Equal(t, "response.incomplete", events[len(events)-1].Type)
	assert.Equal(t, "max_output_tokens", final.IncompleteDetails.Reason)
}

// A function-call round trip through openai-go on the engine under test:
// the streamed call comes whole in the final response with its call_id;
// its output goes back, first as items, then by previous_response_id,
// and the model answers.
func TestResponsesFunctionCallRoundTrip(t *testing.T) {
	f := sdkFixtureFor(t, daemontest.StartEngine(t, nil, nil))
	params := responseParams("What is the weather in Paris?")
	params.Tools = []responses.ToolUnionParam{weatherFunction()}

	events, final := streamResponse(t, f, params)
	require.NotEmpty(t, final.Output)
	var call responses.ResponseOutputItemUnion
	for _, it := range final.Output {
		if it.Type == "function_call" {
			call = it
		}
	}
	require.Equal(t, "function_call", call.Type, "output %s", final.RawJSON())
	assert.Equal(t, "get_weather", call.Name)
	assert.NotEmpty(t, call.CallID)
	checkWeatherArgs(t, call.Arguments.OfString)
	var argDeltas strings.Builder
	var argsDone string
	for _, ev := range events {
		switch ev.Type {
		case "response.function_call_arguments.delta":
			argDeltas.WriteString(ev.Delta)
		case "response.function_call_arguments.done":
			argsDone = ev.Arguments
		}
	}
	assert.Equal(t, call.Arguments.OfString, argDeltas.String())
	assert.Equal(t, call.Arguments.OfString, argsDone)

	// The round trip with every item sent back.
	next := params
	next.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage("What is the weather in Paris?", responses.EasyInputMessageRoleUser),
		responses.ResponseInputItemParamOfFunctionCall(call.Arguments.OfString, call.CallID, call.Name),
		functionOutput(call.CallID, `{"temp_c": 18}`),
	}}
	// seed is npud's extension (the Responses API has none): the two
	// answers are comparable on every engine.
	answer, err := f.client.Responses.New(sdkContext(t), next, option.WithJSONSet("seed", 7))
	require.NoError(t, err)
	assert.Equal(t, responses.ResponseStatusCompleted, answer.Status)
	assert.NotEmpty(t, answer.OutputText())

	// The same by previous_response_id: only the output goes.
	byID := params
	byID.PreviousResponseID = openai.String(final.ID)
	byID.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{functionOutput(call.CallID, `{"temp_c": 18}`)}}
	chained, err := f.client.Responses.New(sdkContext(t), byID, option.WithJSONSet("seed", 7))
	require.NoError(t, err)
	assert.Equal(t, responses.ResponseStatusCompleted, chained.Status)
	assert.Equal(t, final.ID, chained.PreviousResponseID)
	assert.Equal(t, answer.OutputText(), chained.OutputText(), "the stored conversation is the one sent whole")
}

func functionOutput(callID, output string) responses.ResponseInputItemUnionParam {
	item := responses.ResponseInputItemParamOfFunctionCallOutput(output)
	item.OfFunctionCallOutput.CallID = openai.String(callID)
	return item
}

// previous_response_id continues the stored conversation; GET, input_items
// and DELETE see it; another tenant's key sees none of it.
func TestResponsesStoredConversation(t *testing.T) {
	f := newSDKFixture(t, nil, nil)
	first, err := f.client.Responses.New(sdkContext(t), responseParams("hi"))
	require.NoError(t, err)

	params := responseParams("and then?")
	params.PreviousResponseID = openai.String(first.ID)
	second, err := f.client.Responses.New(sdkContext(t), params)
	require.NoError(t, err)
	conversation := userPrompt("hi") + "assistant: " + first.OutputText() + "\n" + userPrompt("and then?")
	assert.Equal(t, prefix(0, conversation, 0), second.OutputText(), "the model read the first turn too")

	got, err := f.client.Responses.Get(sdkContext(t), first.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	assert.Equal(t, first.OutputText(), got.OutputText())

	items, err := f.client.Responses.InputItems.List(sdkContext(t), second.ID, responses.InputItemListParams{})
	require.NoError(t, err)
	require.Len(t, items.Data, 1)
	assert.Equal(t, "message", items.Data[0].Type)

	require.NoError(t, f.client.Responses.Delete(sdkContext(t), first.ID))
	_, err = f.client.Responses.Get(sdkContext(t), first.ID, responses.ResponseGetParams{})
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusNotFound, apiErr.StatusCode)
	_, err = f.client.Responses.New(sdkContext(t), params)
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, "previous_response_id", apiErr.Param)

	noStore := responseParams("hi")
	noStore.Store = openai.Bool(false)
	unstored, err := f.client.Responses.New(sdkContext(t), noStore)
	require.NoError(t, err)
	_, err = f.client.Responses.Get(sdkContext(t), unstored.ID, responses.ResponseGetParams{})
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusNotFound, apiErr.StatusCode)
}

// Codex CLI sends web_search and a namespace of sub-agent functions with
// every request: npud leaves them out of what the model is told instead of
// refusing Codex. The simulated model calls the first tool it was told of,
// so its call of get_weather shows the two were left out.
func TestResponsesIgnoresToolsCodexAlwaysSends(t *testing.T) {
	f := newSDKFixture(t, nil, nil)
	body := `{"model":"sim","input":"What is the weather in Paris?","tools":[` +
		`{"type":"web_search","external_web_access":false},` +
		`{"type":"namespace","name":"multi_agent_v1","description":"sub-agents","tools":[{"type":"function","name":"spawn_agent","parameters":{"type":"object"}}]},` +
		`{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]}`
	resp, err := daemontest.Post(t.Context(), f.http, f.srv.URL+"/v1/responses", "application/json", bytes.NewBufferString(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	var out responses.Response
	require.NoError(t, json.Unmarshal(raw, &out))
	require.NotEmpty(t, out.Output, "%s", raw)
	last := out.Output[len(out.Output)-1]
	assert.Equal(t, "function_call", last.Type, "%s", raw)
	assert.Equal(t, "get_weather", last.Name, "%s", raw)
}

// Codex sends its goal as a function_call_output no call asked for, named
// (goal_objective in namespace agent) instead of a call_id: it reaches the
// model as a user message naming it, instead of a 400 that stopped Codex.
func TestResponsesNamedOutputWithoutACall(t *testing.T) {
	f := newSDKFixture(t, nil, nil)
	body := `{"model":"sim","input":[{"role":"user","content":"hi"},` +
		`{"type":"function_call_output","name":"goal_objective","namespace":"agent","output":"processing"}]}`
	resp, err := daemontest.Post(t.Context(), f.http, f.srv.URL+"/v1/responses", "application/json", bytes.NewBufferString(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	var out responses.Response
	require.NoError(t, json.Unmarshal(raw, &out))
	assert.Equal(t, int64(sim.CountTokens(userPrompt("hi")+userPrompt("agent.goal_objective: processing"))), out.Usage.InputTokens)
}

// Every bad input is a 400 in OpenAI's shape naming the field.
func TestResponsesBadInput(t *testing.T) {
	f := newSDKFixture(t, nil, nil)
	for _, tc := range []struct {
		name, body, param, code string
	}{
		{"no model", `{"input":"hi"}`, "model", "missing_required_parameter"},
		{"no input", `{"model":"sim"}`, "input", "missing_required_parameter"},
		{"input a number", `{"model":"sim","input":3}`, "input", "invalid_type"},
		{"empty items", `{"model":"sim","input":[]}`, "input", "invalid_value"},
		{"file search tool", `{"model":"sim","input":"hi","tools":[{"type":"file_search"}]}`, "tools[0].type", "unsupported_value"},
		{"custom tool", `{"model":"sim","input":"hi","tools":[{"type":"custom","name":"apply_patch"}]}`, "tools[0].type", "unsupported_value"},
		{"bad tool name", `{"model":"sim","input":"hi","tools":[{"type":"function","name":"a b"}]}`, "tools[0].function.name", "invalid_value"},
		{"unknown item", `{"model":"sim","input":[{"type":"item_reference","id":"x"}]}`, "input[0].type", "unsupported_value"},
		{"file part", `{"model":"sim","input":[{"role":"user","content":[{"type":"input_file","file_id":"f"}]}]}`, "input[0].content[0].type", "unsupported_content"},
		{"output of no call", `{"model":"sim","input":[{"type":"function_call_output","call_id":"c1","output":"x"}]}`, "input[0].tool_call_id", "invalid_value"},
		{"output of no call after instructions", `{"model":"sim","instructions":"be brief","input":[{"role":"user","content":"hi"},{"type":"function_call_output","call_id":"c1","output":"x"}]}`, "input[1].tool_call_id", "invalid_value"},
		{"bad effort", `{"model":"sim","input":"hi","reasoning":{"effort":"huge"}}`, "reasoning.effort", "invalid_value"},
		{"zero max_output_tokens", `{"model":"sim","input":"hi","max_output_tokens":0}`, "max_output_tokens", "invalid_value"},
		{"background", `{"model":"sim","input":"hi","background":true}`, "background", "unsupported_parameter"},
		{"json schema without a name", `{"model":"sim","input":"hi","text":{"format":{"type":"json_schema","schema":{}}}}`, "text.format.name", "missing_required_parameter"},
		{"json schema without a schema", `{"model":"sim","input":"hi","text":{"format":{"type":"json_schema","name":"x"}}}`, "text.format.schema", "invalid_value"},
		{"format of another type", `{"model":"sim","input":"hi","text":{"format":{"type":"grammar"}}}`, "text.format.type", "invalid_value"},
		{"top_logprobs", `{"model":"sim","input":"hi","top_logprobs":3}`, "top_logprobs", "unsupported_parameter"},
		{"temperature", `{"model":"sim","input":"hi","temperature":3}`, "temperature", "invalid_value"},
		{"unknown previous", `{"model":"sim","input":"hi","previous_response_id":"resp_nope"}`, "previous_response_id", "response_not_found"},
		{"too much metadata", `{"model":"sim","input":"hi","metadata":{"k":"` + strings.Repeat("v", 513) + `"}}`, "metadata", "invalid_value"},
		{"not json", `{"model":`, "", "invalid_json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := daemontest.Post(t.Context(), f.http, f.srv.URL+"/v1/responses", "application/json", bytes.NewBufferString(tc.body))
			require.NoError(t, err)
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			assert.GreaterOrEqual(t, resp.StatusCode, 400, "%s", body)
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Param   *string `json:"param"`
					Code    string  `json:"code"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(body, &e), "%s", body)
			assert.Equal(t, tc.code, e.Error.Code, "%s", body)
			if tc.param != "" {
				require.NotNil(t, e.Error.Param, "%s", body)
				assert.Equal(t, tc.param, *e.Error.Param, "%s", body)
			}
			assert.NotEmpty(t, e.Error.Message)
		})
	}
}

// A failure after the first byte is an error event, then response.failed:
// the stream always ends with a terminal event.
func TestResponsesInBandFailureEndsWithResponseFailed(t *testing.T) {
	f := newSDKFixture(t, nil, func(*npu.Request) sim.Fault { return sim.Fault{ErrorAtToken: 4} })
	events, final := streamResponse(t, f, responseParams("hi"))
	n := len(events)
	require.GreaterOrEqual(t, n, 2)
	assert.Equal(t, "error", events[n-2].Type)
	assert.Equal(t, "engine_error", events[n-2].Code)
	assert.Equal(t, "response.failed", events[n-1].Type)
	assert.Equal(t, responses.ResponseStatusFailed, final.Status)
	assert.Equal(t, "engine_error", string(final.Error.Code))
	assert.Equal(t, prefix(0, userPrompt("hi"), 3), final.OutputText(), "what was generated before the failure is kept")

	_, err := f.client.Responses.New(sdkContext(t), responseParams("hi"))
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr, "a whole response fails with an HTTP error")
	assert.Equal(t, http.StatusInternalServerError, apiErr.StatusCode)
}

// reasoning.effort turns a thinking model's reasoning on: it comes as a
// reasoning item before the message, streamed as reasoning text deltas,
// and counted in output_tokens_details.reasoning_tokens.
func TestResponsesReasoning(t *testing.T) {
	f := newSDKFixture(t, nil, nil)
	params := responseParams("hi")
	params.Reasoning = shared.ReasoningParam{Effort: shared.ReasoningEffortHigh}
	whole, err := f.client.Responses.New(sdkContext(t), params)
	require.NoError(t, err)
	require.Len(t, whole.Output, 2, "%s", whole.RawJSON())
	assert.Equal(t, "reasoning", whole.Output[0].Type)
	require.NotEmpty(t, whole.Output[0].Content)
	assert.NotEmpty(t, whole.Output[0].Content[0].Text)
	assert.NotContains(t, whole.OutputText(), "<think>")
	assert.Positive(t, whole.Usage.OutputTokensDetails.ReasoningTokens)
	assert.Less(t, whole.Usage.OutputTokensDetails.ReasoningTokens, whole.Usage.OutputTokens)

	events, final := streamResponse(t, f, params)
	var reasoning strings.Builder
	for _, ev := range events {
		if ev.Type == "response.reasoning_text.delta" {
			reasoning.WriteString(ev.Delta)
		}
	}
	assert.Equal(t, whole.Output[0].Content[0].Text, reasoning.String())
	assert.Equal(t, whole.OutputText(), final.OutputText())
}

// Stored responses belong to the key that made them: another tenant can
// neither read, continue, list nor delete them.
func TestResponsesStoreIsScopedToTheKey(t *testing.T) {
	alice := daemon.APIKey{Name: "alice", Key: "sk-alice-0123456789"}
	bob := daemon.APIKey{Name: "bob", Key: "sk-bob-0123456789ab"}
	cfg := daemontest.Defaults(t)
	cfg.APIKeys = []daemon.APIKey{alice, bob}
	srv := daemontest.Start(t, cfg, sim.New(sim.Config{}))
	c := daemontest.NewClient(t, srv.URL)
	as := func(k daemon.APIKey) []string { return []string{"Authorization", "Bearer " + k.Key} }

	resp, raw := c.Do(t, http.MethodPost, "/v1/responses", `{"model":"sim","input":"mine"}`, as(alice)...)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	var created struct{ ID string }
	require.NoError(t, json.Unmarshal(raw, &created))

	for _, tc := range []struct{ method, path, body string }{
		{http.MethodGet, "/v1/responses/" + created.ID, ""},
		{http.MethodGet, "/v1/responses/" + created.ID + "/input_items", ""},
		{http.MethodPost, "/v1/responses/" + created.ID + "/cancel", ""},
		{http.MethodDelete, "/v1/responses/" + created.ID, ""},
		{http.MethodPost, "/v1/responses", `{"model":"sim","input":"more","previous_response_id":"` + created.ID + `"}`},
	} {
		resp, raw := c.Do(t, tc.method, tc.path, tc.body, as(bob)...)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, "bob %s %s: %s", tc.method, tc.path, raw)
		assert.Contains(t, string(raw), "response_not_found")
	}
	resp, raw = c.Do(t, http.MethodGet, "/v1/responses/"+created.ID, "", as(alice)...)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "alice still has it: %s", raw)
	resp, raw = c.Do(t, http.MethodPost, "/v1/responses/"+created.ID+"/cancel", "", as(alice)...)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "not a background response: %s", raw)
}

// The npm openai package's responses stream helper reads npud's stream:
// its events in order, the text assembled from the deltas, the final
// response.
func TestOpenAIJSResponsesStream(t *testing.T) {
	srv := daemontest.StartEngine(t, nil, nil)
	r := daemontest.RunJS(t, "openai", "responses_e2e.mjs", srv.URL, "streamText")
	types, _ := r["types"].([]any)
	require.NotEmpty(t, types, "%v", r)
	assert.Equal(t, "response.created", types[0])
	assert.Equal(t, "response.completed", types[len(types)-1])
	for i, n := range r["sequence"].([]any) {
		assert.Equal(t, float64(i), n)
	}
	assert.Equal(t, "completed", r["status"])
	assert.NotEmpty(t, r["outputText"])
	assert.Equal(t, r["outputText"], r["deltas"])
}

func TestOpenAIJSResponsesToolLoop(t *testing.T) {
	srv := daemontest.StartEngine(t, nil, nil)
	r := daemontest.RunJS(t, "openai", "responses_e2e.mjs", srv.URL, "toolLoop")
	call, _ := r["call"].(map[string]any)
	require.NotNil(t, call, "%v", r)
	assert.Equal(t, "get_weather", call["name"])
	assert.NotEmpty(t, call["call_id"])
	assert.Equal(t, call["arguments"], r["argDeltas"])
	assert.Equal(t, "completed", r["status"])
	assert.NotEmpty(t, r["answer"])
}

// max_output_tokens larger than the room the prompt leaves (agents send
// their own model's limit) is clamped to that room, as max_tokens is on
// chat: the response is incomplete at the context's end, not a 400.
func TestResponsesMaxOutputTokensClamped(t *testing.T) {
	const contextLength = 24
	srv := daemontest.Start(t, daemontest.Defaults(t), sim.New(sim.Config{ContextLength: contextLength}))
	for _, stream := range []bool{false, true} {
		f := sdkFixtureFor(t, srv)
		params := responseParams("hi")
		params.MaxOutputTokens = openai.Int(32000)
		var final *responses.Response
		if stream {
			_, last := streamResponse(t, f, params)
			final = &last
		} else {
			whole, err := f.client.Responses.New(sdkContext(t), params)
			require.NoError(t, err)
			final = whole
		}
		assert.Equal(t, responses.ResponseStatusIncomplete, final.Status, "stream %v", stream)
		assert.Equal(t, "max_output_tokens", final.IncompleteDetails.Reason)
		assert.Equal(t, int64(contextLength), final.Usage.InputTokens+final.Usage.OutputTokens, "it ran to the room the prompt left")
	}
}

// An input_image part with a data URL reaches the model as a picture; a
// bad one is a 400 naming the part's message.
func TestResponsesInputImage(t *testing.T) {
	srv := startSim(t, nil, nil)
	c := daemontest.NewClient(t, srv.URL)
	url := "data:image/png;base64," + base64.StdEncoding.EncodeToString(redBluePNG(t))
	item := func(image string) string {
		return `{"model":"sim","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"What is this?"},{"type":"input_image","image_url":"` + image + `"}]}]}`
	}
	resp, raw := c.Do(t, http.MethodPost, "/v1/responses", item(url))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), "I see an image of 2x1 pixels.")

	resp, raw = c.Do(t, http.MethodPost, "/v1/responses", item("data:image/png;base64,AAAA"))
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), `"param":"input[0].content"`)
	assert.Contains(t, string(raw), "invalid_image")
}
