package chatfmt

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What each family writes, its parser reads back as the same calls,
// however the text is cut: in two at every byte, and a byte at a time. A
// family that reasons reads its reasoning back apart from the calls.
func TestEveryFamilyReadsBackWhatItWrites(t *testing.T) {
	callSets := map[string][]Call{
		"one call": {{Name: "get_weather", Arguments: `{"city": "Oslo", "days": 3}`}},
		"two calls": {
			{Name: "get_weather", Arguments: `{"city":"Paris, France"}`},
			{Name: "get_time", Arguments: `{}`},
		},
		"strings that look like markup": {{Name: "get_weather", Arguments: `{"city": "} ] <tool_call> [TOOL_CALLS] ; \" \\ 日本 🙂"}`}},
		"nested arguments":              {{Name: "get_weather", Arguments: `{"city": "Bonn", "at": {"lat": 50.7, "tags": [1, {"x": null}]}}`}},
	}
	for _, f := range Families() {
		for name, calls := range callSets {
			t.Run(f.Name()+"/"+name, func(t *testing.T) {
				text := f.WriteCalls(calls)
				want := parsedAnswer{calls: withoutIDs(calls)}
				whole, p := feed(t, f.Name(), false, []string{text})
				require.Equal(t, want, whole, "%q", text)
				assert.Empty(t, p.Problems())
				for i := range len(text) {
					got, _ := feed(t, f.Name(), false, []string{text[:i], text[i:]})
					require.Equal(t, want, got, "%q cut at %d", text, i)
				}
				var bytes []string
				for i := range len(text) {
					bytes = append(bytes, text[i:i+1])
				}
				got, _ := feed(t, f.Name(), false, bytes)
				require.Equal(t, want, got, "a byte at a time")
			})
		}
	}
}

// Reasoning, then calls: the family's reasoning splitter takes the
// reasoning apart and leaves the calls whole to its call parser.
func TestFamiliesThatReasonReadReasoningBeforeCalls(t *testing.T) {
	calls := []Call{{Name: "get_time", Arguments: `{}`}}
	reasoned := 0
	for _, f := range Families() {
		if f.NewReasoningSplitter() == nil {
			continue
		}
		reasoned++
		text := ThinkOpen + "\nI should ask the clock.\n" + ThinkClose + "\n\n" + f.WriteCalls(calls)
		for cut := range len(text) + 1 {
			split := f.NewReasoningSplitter()
			r1, c1 := split.Push(text[:cut])
			r2, c2 := split.Push(text[cut:])
			r3, c3 := split.Flush()
			assert.Equal(t, "I should ask the clock.", r1+r2+r3, "%s cut at %d", f.Name(), cut)
			got, _ := feed(t, f.Name(), false, []string{c1 + c2 + c3})
			require.Equal(t, parsedAnswer{calls: calls}, got, "%s cut at %d", f.Name(), cut)
		}
	}
	assert.Positive(t, reasoned)
}

// A family that writes no reasoning apart passes <think> on as content; an
// unknown family (nil) splits it, as every model's answer was before
// families.
func TestSplitReasoningPerFamily(t *testing.T) {
	text := "<think>hm</think>Hello"
	for _, tc := range []struct {
		family             Family
		reasoning, content string
	}{
		{nil, "hm", "Hello"},
		{Hermes{}, "hm", "Hello"},
		{Llama3{}, "", text},
	} {
		s := SplitReasoning(tc.family)
		r, c := s.Push(text)
		r2, c2 := s.Flush()
		assert.Equal(t, tc.reasoning, r+r2, "%v", tc.family)
		assert.Equal(t, tc.content, c+c2, "%v", tc.family)
	}
}

// An upstream's call keeps its id through the relayed form, and arguments
// as the upstream sent them (a JSON string in the relayed object).
func TestRelayedKeepsIDs(t *testing.T) {
	text := Relayed{}.WriteCalls([]Call{{ID: "call_up1", Name: "get_time", Arguments: `{"tz": "UTC"}`}, {ID: "call_up2", Name: "get_time", Arguments: `{}`}})
	p := Relayed{}.NewCallParser(ParserOptions{Tools: []Tool{{Name: "get_time"}}})
	o := p.Push(text)
	end := p.Flush(false)
	assert.Empty(t, o.Content+end.Content)
	assert.Equal(t, []Call{{ID: "call_up1", Name: "get_time", Arguments: `{"tz": "UTC"}`}, {ID: "call_up2", Name: "get_time", Arguments: `{}`}},
		assemble(append(o.Calls, end.Calls...)))
}

func withoutIDs(calls []Call) []Call {
	out := make([]Call, len(calls))
	for i, c := range calls {
		out[i] = Call{Name: c.Name, Arguments: c.Arguments}
	}
	return out
}

// Whatever a call's name and arguments hold, each family reads back what
// it wrote, whole and cut up.
func FuzzFamilyRoundTrip(f *testing.F) {
	f.Add("get_weather", "Oslo", uint8(3), uint8(0))
	f.Add("</tool_call>", "[TOOL_CALLS] {\"name\": ", uint8(1), uint8(1))
	f.Add("f;g", "\x00call\x00", uint8(7), uint8(4))
	families := Families()
	f.Fuzz(func(t *testing.T, name, value string, cut, family uint8) {
		if len(name)+len(value) > 2048 || name == "" || !utf8.ValidString(name) || !utf8.ValidString(value) {
			return // names and arguments are text
		}
		fam := families[int(family)%len(families)]
		if _, ok := fam.(DeepSeekR1); ok && strings.Contains(name, "\n") {
			return // DeepSeek-R1 writes a call's name raw, alone on its line
		}
		args, err := json.Marshal(map[string]string{"v": value})
		require.NoError(t, err)
		calls := []Call{{Name: name, Arguments: string(args)}}
		text := fam.WriteCalls(calls)
		n := int(cut%16) + 1
		var pieces []string
		for i := 0; i < len(text); i += n {
			pieces = append(pieces, text[i:min(i+n, len(text))])
		}
		got, _ := feed(t, fam.Name(), false, pieces)
		require.Equal(t, parsedAnswer{calls: calls}, got, "%q", text)
	})
}
