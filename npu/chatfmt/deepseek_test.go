package chatfmt

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// DeepSeek-R1's calls as its distills write them, read whole and cut at
// every byte: content around them, several in a block, a fence or an end
// marker left out, and text that only looks like a call.
func TestDeepSeekR1CallParser(t *testing.T) {
	const (
		begin = deepSeekCallsBegin + deepSeekCallBegin
		end   = deepSeekCallEnd + deepSeekCallsEnd
	)
	weather := func(args string) Call { return Call{Name: "get_weather", Arguments: args} }
	for _, tc := range []struct {
		name, answer string
		want         parsedAnswer
		problems     int
	}{
		{"one call", begin + "function" + deepSeekSep + "get_weather\n```json\n{\"city\": \"Oslo\"}\n```" + end,
			parsedAnswer{calls: []Call{weather(`{"city": "Oslo"}`)}}, 0},
		{"two calls", begin + "function" + deepSeekSep + "get_weather\n```json\n{\"city\": \"Oslo\"}\n```" + deepSeekCallEnd +
			"\n" + deepSeekCallBegin + "function" + deepSeekSep + "get_time\n```json\n{}\n```" + end,
			parsedAnswer{calls: []Call{weather(`{"city": "Oslo"}`), {Name: "get_time", Arguments: `{}`}}}, 0},
		{"text before and after", "Let me look.\n" + begin + "function" + deepSeekSep + "get_time\n```json\n{}\n```" + end + "\nDone.",
			parsedAnswer{content: "Let me look.\n\nDone.", calls: []Call{{Name: "get_time", Arguments: `{}`}}}, 0},
		{"no block marker, no fence", deepSeekCallBegin + "function" + deepSeekSep + "get_time\n{\"zone\": \"UTC\"}" + deepSeekCallEnd,
			parsedAnswer{calls: []Call{{Name: "get_time", Arguments: `{"zone": "UTC"}`}}}, 0},
		{"no call end", begin + "function" + deepSeekSep + "get_time\n```json\n{}\n```" + deepSeekCallsEnd,
			parsedAnswer{calls: []Call{{Name: "get_time", Arguments: `{}`}}}, 0},
		{"markup inside the arguments", begin + "function" + deepSeekSep + "get_weather\n```json\n{\"city\": \"}```" + deepSeekCallEnd + "\"}\n```" + end,
			parsedAnswer{calls: []Call{weather(`{"city": "}` + "```" + deepSeekCallEnd + `"}`)}}, 0},
		{"a header without a separator is content", deepSeekCallBegin + "get_time\n{}",
			parsedAnswer{content: deepSeekCallBegin + "get_time\n{}"}, 0},
		{"arguments that are no object are content", begin + "function" + deepSeekSep + "get_time\nnow please",
			parsedAnswer{content: begin + "function" + deepSeekSep + "get_time\nnow please"}, 0},
		{"an empty block is content", deepSeekCallsBegin + deepSeekCallsEnd + " ok",
			parsedAnswer{content: deepSeekCallsBegin + deepSeekCallsEnd + " ok"}, 0},
		{"plain text", "No tools: <｜ is not a marker.", parsedAnswer{content: "No tools: <｜ is not a marker."}, 0},
		{"a call cut in its arguments is returned and logged", begin + "function" + deepSeekSep + "get_weather\n```json\n{\"city\": \"Be",
			parsedAnswer{calls: []Call{weather(`{"city": "Be`)}}, 1},
		{"a call cut before its arguments is dropped and logged", "Checking.\n" + begin + "function" + deepSeekSep + "get_wea",
			parsedAnswer{content: "Checking.\n"}, 1},
		{"an undeclared tool is returned and logged", begin + "function" + deepSeekSep + "rm_rf\n```json\n{}\n```" + end,
			parsedAnswer{calls: []Call{{Name: "rm_rf", Arguments: `{}`}}}, 1},
		{"a missing required argument is logged", begin + "function" + deepSeekSep + "get_weather\n```json\n{\"days\": 2}\n```" + end,
			parsedAnswer{calls: []Call{weather(`{"days": 2}`)}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			whole, p := feed(t, "deepseek-r1", false, []string{tc.answer})
			require.Equal(t, tc.want, whole)
			assert.Len(t, p.Problems(), tc.problems, "%v", p.Problems())
			for i := range len(tc.answer) {
				got, _ := feed(t, "deepseek-r1", false, []string{tc.answer[:i], tc.answer[i:]})
				require.Equal(t, tc.want, got, "cut at %d", i)
			}
		})
	}
}

// With parallel calls off the answer ends with the first call.
func TestDeepSeekR1SingleCall(t *testing.T) {
	text := DeepSeekR1{}.WriteCalls([]Call{{Name: "get_time", Arguments: `{}`}, {Name: "get_weather", Arguments: `{"city": "Oslo"}`}})
	got, p := feed(t, "deepseek-r1", true, []string{text})
	assert.Equal(t, parsedAnswer{calls: []Call{{Name: "get_time", Arguments: `{}`}}}, got)
	assert.True(t, p.Finished())
	assert.Equal(t, 1, p.Calls())
}

// A limit that cuts the answer in a call's opener drops the opener's
// start; an answer that ended by itself keeps it.
func TestDeepSeekR1CutInAnOpener(t *testing.T) {
	for _, cut := range []bool{true, false} {
		p := DeepSeekR1{}.NewCallParser(ParserOptions{})
		answer := "Checking. " + deepSeekCallsBegin[:7]
		o := p.Push(answer)
		end := p.Flush(cut)
		want := answer
		if cut {
			want = "Checking. "
		}
		assert.Equal(t, want, o.Content+end.Content, "cut=%v", cut)
		assert.Empty(t, append(o.Calls, end.Calls...))
	}
}

// What the renderer writes for an assistant's calls (after <｜Assistant｜>)
// is what the parser reads back, so the model's own format round-trips.
func TestDeepSeekR1ParsesWhatItsTemplateRenders(t *testing.T) {
	calls := []Call{{Name: "get_weather", Arguments: `{"city": "Oslo"}`}, {Name: "get_time", Arguments: `{}`}}
	text := DeepSeekR1{}.WriteCalls(calls)
	rendered, err := deepSeekR1Renderer{}.Render(Conversation{Messages: []Message{
		{Role: "user", Content: "Weather?"}, {Role: "assistant", ToolCalls: []Call{
			{Name: "get_weather", Arguments: `{"city": "Oslo"}`}, {Name: "get_time", Arguments: `{}`}}},
	}})
	require.NoError(t, err)
	// The template prints arguments as a Python dict, the model as JSON.
	rendered = strings.ReplaceAll(rendered, `{'city': 'Oslo'}`, `{"city": "Oslo"}`)
	assert.Contains(t, rendered, "<｜Assistant｜>"+text+deepSeekEndOfSentence)
}
