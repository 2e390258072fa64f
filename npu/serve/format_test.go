package serve

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/chatfmt"
)

const personSchema = `{"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "maximum": 150}},
	"required": ["name", "age"], "additionalProperties": false}`

func schemaFormat(schema string) *npu.Format {
	return &npu.Format{Type: npu.FormatJSONSchema, Name: "person", Schema: json.RawMessage(schema)}
}

func formatRequest(f *npu.Format) *npu.Request {
	return &npu.Request{Model: "m", Messages: []npu.Message{{Role: "user", Content: "x"}}, Format: f}
}

// A format npud cannot hold an answer to is a 400 at admission, naming the
// keyword, before any engine runs and before the tenant's cap is touched.
func TestFormatRefusedAtAdmission(t *testing.T) {
	e := &fakeEngine{script: texts("{}")}
	r := newTestRouterWith(t, e, PoolConfig{MaxQueue: 4}, RouterConfig{Limits: Limits{StreamCap: 1}})
	for _, tc := range []struct {
		name   string
		format *npu.Format
		want   string
	}{
		{"unsupported keyword", schemaFormat(`{"type": "object", "properties": {"email": {"type": "string", "format": "email"}}}`),
			`schema keyword "format" at /properties/email is not supported`},
		{"not a schema", schemaFormat(`{"type": "strin"}`), "invalid JSON Schema"},
		{"not JSON", schemaFormat(`{"type":`), "invalid JSON Schema"},
		{"no schema", &npu.Format{Type: npu.FormatJSONSchema}, "needs a schema"},
		{"unknown type", &npu.Format{Type: "xml"}, `unknown format type "xml"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := formatRequest(tc.format)
			req.Tenant = "a"
			_, err := r.Start(req)
			var ie *npu.InvalidRequestError
			require.ErrorAs(t, err, &ie)
			assert.Equal(t, "response_format", ie.Param)
			assert.Contains(t, ie.Message, tc.want)
			assert.Equal(t, "invalid_value", npu.ErrorCode(err))
		})
	}
	assert.Zero(t, e.calls(), "no engine ran")
	req := formatRequest(&npu.Format{Type: npu.FormatJSONObject})
	req.Tenant = "a"
	text, final, err := drain(t, start(t, r, req))
	require.NoError(t, err, "the refusals took none of the tenant's one stream")
	assert.Equal(t, "{}", text)
	assert.Equal(t, npu.FinishStop, final.Result.FinishReason)
}

// Whatever engine answers, the bridge hands the writer the valid prefix of
// the document and nothing past it; a whole document ends the answer
// ("stop"); an answer that leaves the format, or ends before its document
// is whole, ends with structured_output_failed after the valid prefix.
func TestFormatHoldsTheAnswer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		format  *npu.Format
		script  []string
		finish  npu.FinishReason
		text    string // what the client receives
		failed  string // "" for a whole document; else in the error
		stopped bool   // the engine was told to stop at the last chunk
	}{
		{name: "whole", format: schemaFormat(personSchema),
			script: []string{`{"na`, `me": "Ann`, `", "age`, `": 31`, `}`}, text: `{"name": "Ann", "age": 31}`},
		{name: "prose after the document is dropped", format: schemaFormat(personSchema),
			script: []string{`{"name": "A", "age": 3}`, "\n\nHope this helps!", "more"}, text: `{"name": "A", "age": 3}`, stopped: true},
		{name: "prose in the same chunk", format: schemaFormat(personSchema),
			script: []string{`{"name": "A", "age": 3} Hope`, "more"}, text: `{"name": "A", "age": 3}`, stopped: true},
		{name: "wrong type", format: schemaFormat(personSchema),
			script: []string{`{"name": "Ann", "age": "`, `31"}`}, text: `{"name": "Ann", "age": `, failed: "after 23 bytes", stopped: true},
		{name: "a number over the maximum is never sent", format: schemaFormat(personSchema),
			script: []string{`{"name": "A", "age": 1`, `5`, `1}`, "x"}, text: `{"name": "A", "age": `, failed: "after 21 bytes", stopped: true},
		{name: "a number within it is sent when it ends", format: schemaFormat(personSchema),
			script: []string{`{"name": "A", "age": 1`, `5`, `0`, ` }`}, text: `{"name": "A", "age": 150 }`},
		{name: "cut short by max tokens", format: schemaFormat(personSchema), finish: npu.FinishLength,
			script: []string{`{"name": "A"`, `, "ag`}, text: `{"name": "A", "ag`, failed: "the answer was cut short (its completion limit or deadline) before its document was whole"},
		{name: "cut short in a number", format: schemaFormat(personSchema), finish: npu.FinishLength,
			script: []string{`{"name": "A", "age": 15`}, text: `{"name": "A", "age": `, failed: "(21 bytes of it)"},
		{name: "ended early", format: schemaFormat(personSchema),
			script: []string{`{"name": "A"`}, text: `{"name": "A"`, failed: "the answer ended before its document was whole"},
		{name: "json mode", format: &npu.Format{Type: npu.FormatJSONObject},
			script: []string{"\n", `{"a": [1, {"b": null}]`, `}`}, text: "\n" + `{"a": [1, {"b": null}]}`},
		{name: "json mode refuses an array", format: &npu.Format{Type: npu.FormatJSONObject},
			script: []string{` [1]`}, text: " ", failed: "after 1 bytes", stopped: true},
		{name: "json mode refuses a fence", format: &npu.Format{Type: npu.FormatJSONObject},
			script: []string{"```json\n{}\n```"}, text: "", failed: "after 0 bytes", stopped: true},
		{name: "a top-level number ends with the answer", format: schemaFormat(`{"type": "integer", "minimum": 40}`),
			script: []string{`4`, `2`}, text: `42`},
		{name: "a top-level number under the minimum", format: schemaFormat(`{"type": "integer", "minimum": 40}`),
			script: []string{`3`, `9`}, text: ``, failed: "before its document was whole"},
		{name: "never half a character", format: schemaFormat(`{"enum": ["日本"]}`),
			script: []string{`"日曜"`}, text: `"日`, failed: "after 4 bytes", stopped: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &fakeEngine{script: texts(tc.script...), finish: tc.finish, flush: []string{"flushed"}}
			r := newTestRouter(t, e, PoolConfig{MaxQueue: 4})
			evs, err := readAll(t, start(t, r, formatRequest(tc.format)))
			text := textOf(evs)
			assert.Equal(t, tc.text, text)
			assert.True(t, utf8.ValidString(text))
			if tc.failed == "" {
				require.NoError(t, err)
				assert.Equal(t, npu.FinishStop, evs[len(evs)-1].Result.FinishReason)
			} else {
				require.ErrorIs(t, err, npu.ErrStructuredOutput)
				assert.Contains(t, err.Error(), tc.failed)
				assert.Equal(t, "structured_output_failed", npu.ErrorCode(err))
			}
			g := e.waitReturned(t, 0)
			if tc.stopped {
				require.NotEmpty(t, g.statuses)
				assert.Equal(t, npu.Stop, g.statuses[len(g.statuses)-1], "the engine was stopped")
			}
		})
	}
}

// Reasoning comes before the document and is not part of it; a tool call
// is the answer, with no document.
func TestFormatLeavesReasoningAndCallsApart(t *testing.T) {
	e := &fakeEngine{details: npu.ModelDetails{ToolFormat: chatfmt.Hermes{}.Name(), Thinking: true},
		script: texts("<think>\nit is {not json", "</think>\n\n", `{"name": "A", "age": 1}`)}
	r := newTestRouter(t, e, PoolConfig{MaxQueue: 4})
	a, err := collect(t, start(t, r, formatRequest(schemaFormat(personSchema))))
	require.NoError(t, err)
	assert.Equal(t, "it is {not json", a.Reasoning)
	assert.Equal(t, `{"name": "A", "age": 1}`, a.Text)

	call := "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>"
	e = &fakeEngine{details: npu.ModelDetails{ToolFormat: chatfmt.Hermes{}.Name()}, script: texts(call)}
	r = newTestRouter(t, e, PoolConfig{MaxQueue: 4})
	req := formatRequest(schemaFormat(personSchema))
	req.Tools = []npu.Tool{weatherTool}
	a, err = collect(t, start(t, r, req))
	require.NoError(t, err)
	require.Len(t, a.ToolCalls, 1)
	assert.Empty(t, a.Text)
	assert.Equal(t, npu.FinishToolCalls, a.Result.FinishReason)
}

func collect(t *testing.T, s npu.Stream) (npu.Answer, error) {
	t.Helper()
	return npu.CollectAnswer(t.Context(), s.Next)
}
