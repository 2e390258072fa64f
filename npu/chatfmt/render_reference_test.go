package chatfmt

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// templatesDir holds the published chat templates, the corpus and GenAI's
// renderings of it (testdata/chattemplates/SOURCES.md).
const templatesDir = "../../testdata/chattemplates"

type corpusCase struct {
	Name                string            `json:"name"`
	Messages            []corpusMessage   `json:"messages"`
	Tools               []json.RawMessage `json:"tools"`
	Think               *bool             `json:"think"`
	AddGenerationPrompt bool              `json:"add_generation_prompt"`
}

type corpusMessage struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
	Reasoning  string `json:"reasoning_content"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type golden struct {
	Template string `json:"template"`
	SHA256   string `json:"sha256"`
	// Today is the day a template that writes the date (strftime_now)
	// was rendered on, as it writes it.
	Today string `json:"today"`
	Cases []struct {
		Name  string  `json:"name"`
		Text  *string `json:"text"`
		Error string  `json:"error"`
	} `json:"cases"`
}

type specials map[string]struct {
	BOS *string `json:"bos_token"`
	EOS *string `json:"eos_token"`
	PAD *string `json:"pad_token"`
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, v), path)
}

func (c corpusCase) conversation(s Specials) Conversation {
	conv := Conversation{Tools: c.Tools, Think: c.Think, AddGenerationPrompt: c.AddGenerationPrompt, Specials: s}
	for _, m := range c.Messages {
		msg := Message{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name, ReasoningContent: m.Reasoning}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, Call{ID: tc.ID, Name: tc.Function.Name, Arguments: string(tc.Function.Arguments)})
		}
		conv.Messages = append(conv.Messages, msg)
	}
	return conv
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// Issue 39 item 3: every published template in testdata/chattemplates has
// a renderer, and it renders every conversation of the corpus to exactly
// the text GenAI renders (or refuses it as the template does).
func TestRenderersMatchGenAI(t *testing.T) {
	var corpus struct {
		Cases []corpusCase `json:"cases"`
	}
	readJSON(t, filepath.Join(templatesDir, "corpus.json"), &corpus)
	var sp specials
	readJSON(t, filepath.Join(templatesDir, "specials.json"), &sp)
	require.NotEmpty(t, sp)
	for name, s := range sp {
		t.Run(name, func(t *testing.T) {
			var g golden
			readJSON(t, filepath.Join(templatesDir, "golden", name+".json"), &g)
			text, err := os.ReadFile(filepath.Join(templatesDir, name+".jinja"))
			require.NoError(t, err)
			tpl, err := RendererFor(string(text))
			require.NoError(t, err, "no renderer reproduces %s", g.Template)
			require.Len(t, g.Cases, len(corpus.Cases), "the golden file is the corpus's: render it again (SOURCES.md)")
			var now time.Time
			if g.Today != "" {
				now, err = time.ParseInLocation(todayLayout, g.Today, time.Local)
				require.NoError(t, err)
			}
			for i, c := range corpus.Cases {
				t.Run(c.Name, func(t *testing.T) {
					want := g.Cases[i]
					require.Equal(t, c.Name, want.Name)
					conv := c.conversation(Specials{BOS: str(s.BOS), EOS: str(s.EOS), PAD: str(s.PAD)})
					conv.Now = now
					got, err := tpl.Render(conv)
					if want.Text == nil {
						var te *TemplateError
						require.ErrorAs(t, err, &te, "GenAI's template refuses it: %s", want.Error)
						assert.Equal(t, want.Error, te.Message)
						return
					}
					require.NoError(t, err)
					assert.Equal(t, *want.Text, got)
				})
			}
		})
	}
}

// A template npud does not reproduce byte for byte is not claimed: a
// single changed byte of a known one finds no renderer.
func TestRendererForUnknownTemplate(t *testing.T) {
	for _, tpl := range []string{"", "{{ messages[0].content }}"} {
		_, err := RendererFor(tpl)
		assert.ErrorIs(t, err, ErrUnknownTemplate)
	}
	var sp specials
	readJSON(t, filepath.Join(templatesDir, "specials.json"), &sp)
	for name := range sp {
		text, err := os.ReadFile(filepath.Join(templatesDir, name+".jinja"))
		require.NoError(t, err)
		_, err = RendererFor(string(text) + " ")
		assert.ErrorIs(t, err, ErrUnknownTemplate, name)
	}
}

// The golden files are what the pinned GenAI renders: rendered again
// through the wheel, they are unchanged (make test, with the wheels).
func TestOfficialGenAIRendersTheGoldenFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("renders through the official OpenVINO GenAI wheel: not with -short")
	}
	venv := os.Getenv("NPUD_OPENVINO_VENV")
	if venv == "" {
		t.Skip("NPUD_OPENVINO_VENV is not set: the checks against the official OpenVINO wheels run in make test")
	}
	out := t.TempDir()
	cmd := exec.CommandContext(t.Context(), filepath.Join(venv, "bin", "python"),
		filepath.Join(templatesDir, "render_reference.py"), "../../testdata/openvino/tinymodel/model", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	want, err := filepath.Glob(filepath.Join(templatesDir, "golden", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, want)
	for _, path := range want {
		committed, err := os.ReadFile(path)
		require.NoError(t, err)
		fresh, err := os.ReadFile(filepath.Join(out, filepath.Base(path)))
		require.NoError(t, err)
		// The version line names the wheel; everything else must match,
		// the date a template writes read as the committed file's day.
		assert.Equal(t, dropVersion(string(committed)), dropVersion(onDayOf(t, fresh, committed)), filepath.Base(path))
	}
}

// todayLayout is the date as the templates write it (strftime "%d %b %Y").
const todayLayout = "02 Jan 2006"

// onDayOf is the fresh golden file with the day it was rendered on (its
// "today", when its template writes the date) replaced by the committed
// file's.
func onDayOf(t *testing.T, fresh, committed []byte) string {
	var f, c golden
	require.NoError(t, json.Unmarshal(fresh, &f))
	require.NoError(t, json.Unmarshal(committed, &c))
	if f.Today == "" || c.Today == "" {
		return string(fresh)
	}
	return strings.ReplaceAll(string(fresh), f.Today, c.Today)
}

func dropVersion(s string) string {
	var keep []string
	for _, line := range strings.Split(s, "\n") {
		if !strings.Contains(line, `"rendered_by"`) {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}

func TestToJSON(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"unit":"celsius","city":"Oslo"}`, `{"unit": "celsius", "city": "Oslo"}`},
		{`[1, 2.50, -0.0, 1e2, 12345678901234567890, true, null]`, `[1, 2.5, -0.0, 100.0, 12345678901234567890, true, null]`},
		// As GenAI 2026.4.1 printed these doubles through tojson.
		{`[1e6, 1234567.5, 1e15, 1e16, 123456789012345.6, 0.0001, 0.00001, 1e21, 1.5e-7, 0.1, 3.0e10, 9007199254740993.0, 1.7976931348623157e308, 99999999999999.99, 999999999999999.9]`,
			`[1000000.0, 1234567.5, 1e+15, 1e+16, 123456789012345.6, 0.0001, 1e-05, 1e+21, 1.5e-07, 0.1, 30000000000.0, 9.007199254740992e+15, 1.7976931348623157e+308, 99999999999999.98, 999999999999999.9]`},
		{`{"s":"Tromsø \"q\" \\ \n\t\u0001 /"}`, `{"s": "Tromsø \"q\" \\ \n\t\u0001 /"}`},
		{`{}`, `{}`},
		{`[]`, `[]`},
		{`{"a":{"b":[{}]}}`, `{"a": {"b": [{}]}}`},
	} {
		got, err := ToJSON([]byte(tc.in))
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
	for _, bad := range []string{``, `{`, `{"a":1} 2`, `[1,]`} {
		_, err := ToJSON([]byte(bad))
		assert.Error(t, err, bad)
	}
	var te *TemplateError
	assert.False(t, errors.As(ErrUnknownTemplate, &te))
}
