package chatfmt

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var weatherTool = Tool{Name: "get_weather", Parameters: json.RawMessage(
	`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}`)}

type parsedAnswer struct {
	content string
	calls   []Call
}

// assemble puts pieces of calls back together, as a client does.
func assemble(pieces []CallDelta) []Call {
	var calls []Call
	for _, d := range pieces {
		for len(calls) <= d.Index {
			calls = append(calls, Call{})
		}
		c := &calls[d.Index]
		if d.ID != "" {
			c.ID, c.Name = d.ID, d.Name
		}
		c.Arguments += d.Arguments
	}
	return calls
}

// feed runs text through a parser in the given pieces and assembles what
// comes out, checking the pieces' order on the way.
func feed(t *testing.T, format string, single bool, pieces []string) (parsedAnswer, CallParser) {
	t.Helper()
	f := Lookup(format)
	require.NotNil(t, f, format)
	p := f.NewCallParser(ParserOptions{Tools: []Tool{weatherTool, {Name: "get_time"}}, Single: single})
	var out parsedAnswer
	var all []CallDelta
	started := map[int]bool{}
	take := func(o Output) {
		out.content += o.Content
		for _, d := range o.Calls {
			if d.ID != "" {
				require.False(t, started[d.Index], "call %d started twice", d.Index)
				require.NotEmpty(t, d.Name)
				started[d.Index] = true
			}
			require.True(t, started[d.Index], "a piece of call %d before its name", d.Index)
		}
		all = append(all, o.Calls...)
	}
	for _, piece := range pieces {
		take(p.Push(piece))
	}
	take(p.Flush(false))
	for _, c := range assemble(all) {
		out.calls = append(out.calls, Call{Name: c.Name, Arguments: c.Arguments})
	}
	return out, p
}

func TestToolCallParserFamilies(t *testing.T) {
	weather := func(args string) Call { return Call{Name: "get_weather", Arguments: args} }
	cases := []struct {
		name, format, answer string
		want                 parsedAnswer
		problems             int
	}{
		{"qwen2.5 one call", Hermes{}.Name(),
			"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris, France\", \"days\": 3}}\n</tool_call>",
			parsedAnswer{calls: []Call{weather(`{"city": "Paris, France", "days": 3}`)}}, 0},
		{"qwen3 two calls", Hermes{}.Name(),
			"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>",
			parsedAnswer{calls: []Call{weather(`{"city": "Oslo"}`), {Name: "get_time", Arguments: `{}`}}}, 0},
		{"hermes text then call", Hermes{}.Name(),
			"Let me look that up.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>",
			parsedAnswer{content: "Let me look that up.\n", calls: []Call{weather(`{"city": "Rome"}`)}}, 0},
		{"hermes plain text with angle brackets", Hermes{}.Name(),
			"If a < b then <tool is not a tag, and {\"name\": 1} is text.",
			parsedAnswer{content: "If a < b then <tool is not a tag, and {\"name\": 1} is text."}, 0},
		{"hermes tag without a call is content", Hermes{}.Name(),
			"<tool_call>oops</tool_call> done",
			parsedAnswer{content: "<tool_call>oops</tool_call> done"}, 0},
		{"hermes arguments before name", Hermes{}.Name(),
			"<tool_call>\n{\"arguments\": {\"city\": \"Lima\"}, \"name\": \"get_weather\"}\n</tool_call>",
			parsedAnswer{calls: []Call{weather(`{"city": "Lima"}`)}}, 0},
		{"arguments as a JSON string", Hermes{}.Name(),
			"<tool_call>{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Kyiv\\\"}\"}</tool_call>",
			parsedAnswer{calls: []Call{weather(`{"city": "Kyiv"}`)}}, 0},
		{"braces and quotes inside strings", Hermes{}.Name(),
			"<tool_call>{\"name\":\"get_weather\",\"arguments\":{\"city\":\"} { \\\" ] [\"}}</tool_call>",
			parsedAnswer{calls: []Call{weather(`{"city":"} { \" ] ["}`)}}, 0},
		{"a call cut short is returned and logged", Hermes{}.Name(),
			"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Be",
			parsedAnswer{calls: []Call{weather(`{"city": "Be`)}}, 1},
		{"a call missing a required argument is returned and logged", Hermes{}.Name(),
			"<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"days\": \"two\"}}</tool_call>",
			parsedAnswer{calls: []Call{weather(`{"days": "two"}`)}}, 1},
		{"a call to an undeclared tool is returned and logged", Hermes{}.Name(),
			"<tool_call>{\"name\": \"rm_rf\", \"arguments\": {}}</tool_call>",
			parsedAnswer{calls: []Call{{Name: "rm_rf", Arguments: `{}`}}}, 1},
		// Issue 27: max_tokens cut a call before its name, and its markup
		// came out as content with finish_reason length.
		{"a call cut before its name is dropped and logged", Hermes{}.Name(),
			"<tool_call>\n{\"name",
			parsedAnswer{}, 1},
		{"a call cut after its opener is dropped and logged", Hermes{}.Name(),
			"Let me check.\n<tool_call>\n",
			parsedAnswer{content: "Let me check.\n"}, 1},
		{"a call cut before its name, arguments first, is dropped", Hermes{}.Name(),
			"<tool_call>{\"arguments\": {\"city\": \"Lima\"}, \"na",
			parsedAnswer{}, 1},
		{"a bare llama call cut before its name is dropped", Llama3{}.Name(),
			"{\"name\": \"get_wea",
			parsedAnswer{}, 1},
		{"bare JSON cut short that is no call stays content", Llama3{}.Name(),
			"{\"answer\": 4",
			parsedAnswer{content: "{\"answer\": 4"}, 0},
		{"a tag prefix at the end is content", Hermes{}.Name(), "Hello <tool_",
			parsedAnswer{content: "Hello <tool_"}, 0},
		{"llama 3.1 bare call", Llama3{}.Name(),
			"{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
			parsedAnswer{calls: []Call{weather(`{"city": "Paris"}`)}}, 0},
		{"llama 3.1 python tag and two calls", Llama3{}.Name(),
			"<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}; {\"name\": \"get_time\", \"parameters\": {}}",
			parsedAnswer{calls: []Call{weather(`{"city": "Paris"}`), {Name: "get_time", Arguments: `{}`}}}, 0},
		{"llama JSON that is no call", Llama3{}.Name(), "{\"answer\": 42}",
			parsedAnswer{content: "{\"answer\": 42}"}, 0},
		{"llama text", Llama3{}.Name(), "The weather in {city} is fine.",
			parsedAnswer{content: "The weather in {city} is fine."}, 0},
		{"llama list that is no call", Llama3{}.Name(), "[1] first\n[2] second",
			parsedAnswer{content: "[1] first\n[2] second"}, 0},
		{"mistral with marker", Mistral{}.Name(),
			"[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Nice\"}}, {\"name\": \"get_time\", \"arguments\": {}}]",
			parsedAnswer{calls: []Call{weather(`{"city": "Nice"}`), {Name: "get_time", Arguments: `{}`}}}, 0},
		{"mistral marker skipped by the detokenizer", Mistral{}.Name(),
			" [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Nice\"}}]",
			parsedAnswer{calls: []Call{weather(`{"city": "Nice"}`)}}, 0},
		{"phi-4-mini tags", Phi4Mini{}.Name(),
			"<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Bonn\"}}]<|/tool_call|>",
			parsedAnswer{calls: []Call{weather(`{"city": "Bonn"}`)}}, 0},
		{"phi-4-mini functools", Phi4Mini{}.Name(),
			"functools[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Bonn\"}}]",
			parsedAnswer{calls: []Call{weather(`{"city": "Bonn"}`)}}, 0},
		{"phi-4-mini type/function objects", Phi4Mini{}.Name(),
			"[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Bonn\"}}}]",
			parsedAnswer{calls: []Call{weather(`{"city": "Bonn"}`)}}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			whole, p := feed(t, tc.format, false, []string{tc.answer})
			assert.Equal(t, tc.want, whole)
			assert.Len(t, p.Problems(), tc.problems, "%v", p.Problems())
			// Cut in two at every byte, and a byte at a time.
			for i := range len(tc.answer) {
				got, _ := feed(t, tc.format, false, []string{tc.answer[:i], tc.answer[i:]})
				require.Equal(t, tc.want, got, "cut at %d", i)
			}
			var bytes []string
			for i := range len(tc.answer) {
				bytes = append(bytes, tc.answer[i:i+1])
			}
			got, _ := feed(t, tc.format, false, bytes)
			assert.Equal(t, tc.want, got, "a byte at a time")
		})
	}
}

// The name goes out as soon as it is known and the arguments as they
// come, not when the call is complete.
func TestToolCallParserStreamsArguments(t *testing.T) {
	p := Hermes{}.NewCallParser(ParserOptions{Tools: []Tool{weatherTool}})
	o := p.Push("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"ci")
	content, calls := o.Content, o.Calls
	assert.Empty(t, content)
	require.Len(t, calls, 2)
	assert.Equal(t, "get_weather", calls[0].Name)
	assert.Regexp(t, `^call_[A-Za-z0-9]{24}$`, calls[0].ID)
	assert.Equal(t, `{"ci`, calls[1].Arguments)
	calls = p.Push("ty\": \"Oslo\"}}\n</tool_call>").Calls
	assert.Equal(t, []CallDelta{{Arguments: `ty": "Oslo"}`}, {Done: true}}, calls)
}

// With parallel calls off the answer ends at the first complete call.
func TestToolCallParserSingleCall(t *testing.T) {
	answer := "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>"
	got, p := feed(t, Hermes{}.Name(), true, []string{answer})
	assert.Equal(t, parsedAnswer{calls: []Call{{Name: "get_time", Arguments: `{}`}}}, got)
	assert.True(t, p.Finished())
}

func TestToolCallIDsForMistral(t *testing.T) {
	p := Mistral{}.NewCallParser(ParserOptions{})
	calls := p.Push(`[{"name": "f", "arguments": {}}]`).Calls
	require.NotEmpty(t, calls)
	assert.Regexp(t, `^[A-Za-z0-9]{9}$`, calls[0].ID, "Mistral's template raises on any other id")
}

func TestCheckArguments(t *testing.T) {
	schema := weatherTool.Parameters
	for _, tc := range []struct{ args, problem string }{
		{`{"city": "Oslo"}`, ""},
		{`{"city": "Oslo", "days": 2}`, ""},
		{`{"city": "Oslo", "days": 2.5}`, `argument "days" is not of type integer`},
		{`{"days": 2}`, `required argument "city" is missing`},
		{`{"city": 3}`, `argument "city" is not of type string`},
		{`{"city": "Os`, "its arguments are not a JSON object"},
		{`["Oslo"]`, "its arguments are not a JSON object"},
	} {
		assert.Equal(t, tc.problem, CheckArguments(tc.args, schema), tc.args)
	}
	assert.Empty(t, CheckArguments(`{"x": 1}`, nil))
}

// The parser's cost per chunk on an answer that holds no call (the common
// case: the text must be checked for openers) and on one that is a call.
func BenchmarkToolCallParser(b *testing.B) {
	text := strings.Repeat("The weather in Oslo is cold; bring a coat < and a hat. ", 20)
	call := "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"days\": 3}}\n</tool_call>"
	for _, bc := range []struct{ name, answer string }{{"text", text}, {"call", call}} {
		b.Run(bc.name, func(b *testing.B) {
			chunks := []string{}
			for i := 0; i < len(bc.answer); i += 4 {
				chunks = append(chunks, bc.answer[i:min(i+4, len(bc.answer))])
			}
			b.SetBytes(int64(len(bc.answer)))
			for b.Loop() {
				p := Hermes{}.NewCallParser(ParserOptions{Tools: []Tool{weatherTool}})
				for _, c := range chunks {
					p.Push(c)
				}
				p.Flush(false)
			}
		})
	}
}

// Whatever the model writes and however the engine cuts it, the parser
// reads it the same way as when it comes whole, and loses nothing: the
// content and the calls' names and arguments are what a one-piece read
// gives, and every call's pieces come in order.
func FuzzToolCallParser(f *testing.F) {
	for _, seed := range []string{
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>",
		"text <tool_call>{\"arguments\": {}, \"name\": \"f\"}</tool_call> more",
		"{\"name\": \"f\", \"parameters\": {\"a\": [1, {\"b\": \"}\"}]}}; {\"name\": \"g\", \"parameters\": {}}",
		"[TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {}}]",
		"<tool_call>oops",
		"{\"name\": \"f\", \"arguments\": \"{\\\"x\\\": 1}\"}",
	} {
		f.Add(seed, uint8(3), uint8(0))
	}
	var formats []string
	for _, f := range Families() {
		formats = append(formats, f.Name())
	}
	f.Fuzz(func(t *testing.T, answer string, cut, format uint8) {
		if len(answer) > 4096 {
			return
		}
		fmtName := formats[int(format)%len(formats)]
		whole, _ := feed(t, fmtName, false, []string{answer})
		n := int(cut%16) + 1
		var pieces []string
		for i := 0; i < len(answer); i += n {
			pieces = append(pieces, answer[i:min(i+n, len(answer))])
		}
		cutUp, _ := feed(t, fmtName, false, pieces)
		require.Equal(t, whole, cutUp)
	})
}

// A call that carries its id (an upstream's, relayed) keeps it, streamed
// or decoded whole.
func TestToolCallParserKeepsAnID(t *testing.T) {
	for _, answer := range []string{
		"<tool_call>\n{\"id\": \"call_up1\", \"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>",
		"<tool_call>\n{\"arguments\": {\"city\": \"Oslo\"}, \"id\": \"call_up1\", \"name\": \"get_weather\"}\n</tool_call>",
	} {
		p := Hermes{}.NewCallParser(ParserOptions{Tools: []Tool{weatherTool}})
		calls := p.Push(answer).Calls
		more := p.Flush(false).Calls
		calls = append(calls, more...)
		require.NotEmpty(t, calls)
		assert.Equal(t, "call_up1", calls[0].ID, answer)
		assert.Equal(t, "get_weather", calls[0].Name)
	}
}

// Issue 27: when a limit cut the answer (finish_reason length) inside a
// call's opener, the opener's start is dropped and logged, not shown as
// text; an answer that ended by itself keeps it (it may be text).
func TestToolCallParserCutInAnOpener(t *testing.T) {
	for _, tc := range []struct {
		answer, content string
		cut             bool
		problems        int
	}{
		{"<tool", "", true, 1},
		{"Checking. <tool_ca", "Checking. ", true, 1},
		{"a < b", "a < b", false, 0},
		{"Hello <tool_", "Hello <tool_", false, 0},
		{"no opener here", "no opener here", true, 0},
	} {
		p := Hermes{}.NewCallParser(ParserOptions{Tools: []Tool{weatherTool}})
		o := p.Push(tc.answer)
		content, calls := o.Content, o.Calls
		end := p.Flush(tc.cut)
		rest, more := end.Content, end.Calls
		assert.Equal(t, tc.content, content+rest, "%q cut=%v", tc.answer, tc.cut)
		assert.Empty(t, append(calls, more...))
		assert.Len(t, p.Problems(), tc.problems, "%q: %v", tc.answer, p.Problems())
	}
}

// A call header's verdict never depends on where the text was cut: once a
// prefix of an object is known to be a call's header, or no call's, every
// longer prefix says the same. A number where the name goes said "other"
// when cut after "0" but "more" when cut after "0.", so the same answer
// was content when streamed and dropped when read whole (found by
// FuzzToolCallParser).
func TestCallHeaderVerdictIsTheSameWhereverTheTextIsCut(t *testing.T) {
	for _, obj := range []string{
		`{"name":0.5,"arguments":{}}`,
		`{"name": 12, "arguments": {}}`,
		`{"id": 7, "name": "f"}`,
		`{"name": null}`,
		`{"name":"f","arguments":{"a":1}}`,
		`{"id":"c1","name":"f","parameters":{}}`,
		`{"arguments":{},"name":"f"}`,
		`{"name":"f","arguments":"{}"}`,
		`{}`,
	} {
		settled := headerMore
		for n := 1; n <= len(obj); n++ {
			_, _, _, v := callHeader([]byte(obj[:n]))
			if settled != headerMore {
				require.Equal(t, settled, v, "%s cut after %q", obj, obj[:n])
			}
			settled = v
		}
	}
}

// With a structured output asked for, a bare JSON answer that names no
// declared tool is the document, whole, in every bare-JSON family; a call
// of a declared tool is still a call.
func TestDocumentIsNoCallOfAnUndeclaredTool(t *testing.T) {
	doc := `{"name": "Ada", "age": 36}`
	for _, f := range Families() {
		t.Run(f.Name(), func(t *testing.T) {
			p := f.NewCallParser(ParserOptions{Tools: []Tool{weatherTool}, Document: true})
			var content strings.Builder
			var calls []CallDelta
			for _, c := range doc {
				o := p.Push(string(c))
				content.WriteString(o.Content)
				calls = append(calls, o.Calls...)
			}
			o := p.Flush(false)
			content.WriteString(o.Content)
			calls = append(calls, o.Calls...)
			assert.Empty(t, calls)
			assert.Equal(t, doc, content.String())

			p = f.NewCallParser(ParserOptions{Tools: []Tool{weatherTool}, Document: true})
			o = p.Push(f.WriteCalls([]Call{{Name: weatherTool.Name, Arguments: `{"city": "Oslo"}`}}))
			o2 := p.Flush(false)
			assert.NotEmpty(t, append(o.Calls, o2.Calls...), "a declared tool's call")
		})
	}
}
