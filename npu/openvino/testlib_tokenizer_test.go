//go:build cgo

package openvino

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
)

// genaiRender asks the official GenAI tokenizer to render conversations
// (JSON objects as genai_tokenizer.py render takes them, their keys in the
// order a client sends them) with the folder's chat template and the
// generation prompt.
func genaiRender(t testing.TB, venv, folder string, conversations []string) []string {
	t.Helper()
	in := "[" + strings.Join(conversations, ",") + "]"
	cmd := exec.CommandContext(context.Background(), filepath.Join(venv, "bin", "python"), tokenizerScript(), "render", folder)
	cmd.Stdin = strings.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s", stderr.String())
	var texts []string
	require.NoError(t, json.Unmarshal(out, &texts))
	require.Len(t, texts, len(conversations))
	return texts
}

// weatherToolJSON is the tool of the daemon's usage test
// (TestOpenVINOUsageIsGenAIsCount), byte for byte.
const weatherToolJSON = `{"type":"function","function":{"name":"get_weather","description":"Get the current weather in a city",` +
	`"parameters":{"type":"object","properties":{"city":{"type":"string","description":"The city's name"}},"required":["city"]}}}`

// renderedConversations are the conversations of the daemon's usage test
// and more, with GenAI's count of each as the tiny model's template
// renders it (0: not asserted).
var renderedConversations = []struct {
	name, conversation string
	tokens             int
}{
	{"say hello", `{"messages":[{"role":"user","content":"Say hello"}]}`, 22},
	{"thinking off", `{"messages":[{"role":"user","content":"Say hello"}],"enable_thinking":false}`, 28},
	{"one tool", `{"messages":[{"role":"user","content":"What's the weather in Paris?"}],"tools":[` + weatherToolJSON + `]}`, 445},
	{"a second turn", `{"messages":[{"role":"user","content":"Say hello"},{"role":"assistant","content":"Hello! How can I help?"},` +
		`{"role":"user","content":"Tell me a joke about 42 cats.\n\nMake it short."}]}`, 90},
	{"a call and its result", `{"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"What's the weather in Paris?"},` +
		`{"role":"assistant","content":"","tool_calls":[{"type":"function","function":{"name":"get_weather","arguments":{"city":"Paris"}}}]},` +
		`{"role":"tool","content":"{\"temp_c\": 21, \"sky\": \"clear\"}"}],"tools":[` + weatherToolJSON + `]}`, 0},
}

// testLibraryTexts are texts of every kind a prompt holds: conversations
// rendered with the tiny model's Qwen3 template (rendered by GenAI in
// TestOfficialTestLibraryTokenizesLikeGenAI), and plain text.
var testLibraryTexts = []struct {
	name, text string
	ascii      bool
}{
	{"plain English", "Say hello to the people of the world, and tell them the news.", true},
	{"contractions", "It's 2048 tokens; don't you'll we've I'm he'd they're 'S 'LL ''' '", true},
	{"numbers", "numbers 1234567890 3.14159 -42 1e10 100% 0x7f 2026-11-28", true},
	{"punctuation", "punctuation: !!! ??? ... --- (a) [b] {c} <d> @#$%^&*_+=|\\~` \"quoted\"", true},
	{"whitespace runs", "  \n\n\t leading and trailing whitespace \n a  b   c    d\n\n\ne\r\nwindows\t\ttabs   ", true},
	{"only spaces", "   ", true},
	{"the tags", "<think>\nhmm\n</think>\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\n<tool_response>ok</tool_response>", true},
	{"special tokens back to back", "<|im_start|><|im_end|><|endoftext|>x<|im_start|>\n<thinking> <tool_call_x> <|im_star", true},
	{"a hand-templated conversation (Zürich)", qwenConversation, false},
	{"the same, 100 times (some 70 kB)", strings.Repeat(qwenConversation, 100), false},
	{"Latin, CJK, emoji, a dash, a no-break space", "café 日本 🙂 naïve — ü\u00a0ß Zürich", false},
	{"Greek, Cyrillic, Hangul, Arabic digits, fractions", "Ελληνικά русский 한국어 中文 ١٢٣ ½ ² e\u0301 \u3000x", false},
}

// Issue 39 item 7: the test library's core tokenizer (npud's
// ModelTokenizer opened on it) gives the tiny model's texts the ids the
// real one does: openvino_genai.Tokenizer(tiny).encode(text,
// add_special_tokens=False), for conversations GenAI renders with the
// model's Qwen3 template (tools, a call and its result, thinking off, two
// turns) and for plain text of every kind. The non-ASCII texts are equal
// too (the test library approximates Unicode's letter and number classes:
// ovbpe_test.c says how).
func TestOfficialTestLibraryTokenizesLikeGenAI(t *testing.T) {
	venv, _ := realVenv(t)
	var conversations []string
	for _, c := range renderedConversations {
		conversations = append(conversations, c.conversation)
	}
	rendered := genaiRender(t, venv, tinyModel, conversations)
	type text struct {
		name, text string
		ascii      bool
	}
	var texts []text
	for i, r := range rendered {
		texts = append(texts, text{"rendered: " + renderedConversations[i].name, r, true})
	}
	for _, tc := range testLibraryTexts {
		texts = append(texts, text(tc))
	}
	all := make([]string, len(texts))
	for i, tc := range texts {
		all[i] = tc.text
	}
	want, _ := genaiIDs(t, venv, tinyModel, all)

	tok := openTestTokenizer(t, tinyModel, TokenizerOptions{})
	for i, tc := range texts {
		got, err := tok.Encode(t.Context(), tc.text)
		require.NoError(t, err, tc.name)
		if tc.ascii {
			assert.Equal(t, want[i], append([]int64{}, got...), "%s: the test library's ids are GenAI's", tc.name)
		} else if !assert.ObjectsAreEqual(want[i], append([]int64{}, got...)) {
			t.Errorf("%s: the test library's ids differ from GenAI's (its Unicode classes are approximations): got %v, GenAI %v", tc.name, got, want[i])
		}
	}
	for i, c := range renderedConversations {
		if c.tokens > 0 {
			assert.Len(t, want[i], c.tokens, "%s: GenAI's count, which the daemon's usage test expects", c.name)
		}
	}
}

// The test library's core reads the tokenizer.json beside the IR it is
// given, through a prompt view's symlink, and counts a folder without one
// as words: the same ids through the view as from the model's folder, a
// templated prompt counted by its BPE tokens (GenAI's 22 for "Say hello",
// measured on the real runtime), not its four words.
func TestTestLibraryTokenizerReadsTheFoldersTokenizerJSON(t *testing.T) {
	view, err := makePromptView(tinyModel)
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(view) })
	direct := openTestTokenizer(t, tinyModel, TokenizerOptions{})
	viewed := openTestTokenizer(t, view, TokenizerOptions{})
	words := openTestTokenizer(t, tokenizerFolder(t, ""), TokenizerOptions{})
	const sayHello = "<|im_start|>user\nSay hello<|im_end|>\n<|im_start|>assistant\n"
	for _, tc := range testLibraryTexts {
		a, err := direct.Encode(t.Context(), tc.text)
		require.NoError(t, err)
		b, err := viewed.Encode(t.Context(), tc.text)
		require.NoError(t, err)
		assert.Equal(t, a, b, "%s: the view's tokenizer is the model's", tc.name)
	}
	n, err := viewed.Count(t.Context(), sayHello)
	require.NoError(t, err)
	assert.Equal(t, 22, n, "GenAI's count of the rendered \"Say hello\"")
	n, err = words.Count(t.Context(), sayHello)
	require.NoError(t, err)
	assert.Equal(t, len(strings.Fields(sayHello)), n, "a folder without tokenizer.json counts words")

	// A tokenizer.json that is not JSON fails the read, as the real
	// GenAI's Tokenizer fails on a broken folder; one of another kind
	// counts words.
	broken := tokenizerFolder(t, "")
	require.NoError(t, os.WriteFile(filepath.Join(broken, "tokenizer.json"), []byte(`{"model": {"type": "BPE", "vocab": {"a": 1,}}}`), 0o644))
	_, err = testLib.OpenTokenizer(t.Context(), broken, TokenizerOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "tokenizer.json: not valid JSON at byte")
	other := tokenizerFolder(t, "")
	require.NoError(t, os.WriteFile(filepath.Join(other, "tokenizer.json"), []byte(`{"model": {"type": "Unigram", "vocab": [["a", 0]]}}`), 0o644))
	n, err = openTestTokenizer(t, other, TokenizerOptions{}).Count(t.Context(), sayHello)
	require.NoError(t, err)
	assert.Equal(t, len(strings.Fields(sayHello)), n)
}

// Issue 39 item 7: with the folder's BPE tokenizer the test model writes
// its answer in that tokenizer's tokens, one token a step, as a real
// model generates and GenAI's TextStreamer streams them: the completion
// count is the answer's token count (not its words'), and the stream
// comes in more, shorter chunks than it has words.
func TestTestLibraryAnswersInTheFoldersTokens(t *testing.T) {
	_, r := newTestEngine(t, "CPU", Config{ModelsDir: tinyModels(t), Device: "CPU"})
	tok := openTestTokenizer(t, tinyModel, TokenizerOptions{})
	no := false
	// A seed of its own: an answer that ends inside a character (the
	// emoji the test model spells as two byte tokens) comes out with a
	// replacement character, which encodes to other tokens.
	seed := int64(3)
	for _, prompt := range []string{"Say hello", "Write a long story about the NPU, please."} {
		s, err := r.Start(&npu.Request{Model: "tiny", Prompt: prompt, Think: &no, Sampling: npu.Sampling{Seed: &seed}})
		require.NoError(t, err)
		var chunks []string
		var res npu.Result
		callbacks := 0
		for {
			ev, err := s.Next(t.Context())
			require.NoError(t, err)
			if ev.Text != "" {
				chunks = append(chunks, ev.Text)
				callbacks += ev.Tokens
			}
			if ev.Done {
				res = ev.Result
				break
			}
		}
		s.Close()
		text := strings.Join(chunks, "")
		ids, err := tok.Encode(t.Context(), text)
		require.NoError(t, err)
		assert.Equal(t, len(ids), res.CompletionTokens, "%q: the answer's tokens, counted", text)
		assert.Greater(t, res.CompletionTokens, len(strings.Fields(text)), "%q: more tokens than words", text)
		assert.Greater(t, callbacks, len(strings.Fields(text)), "%q: streamed a token at a time, not a word", text)
	}
}

// GenAI's detokenizer skips special tokens (skip_special_tokens): with
// the tiny model's <think> and </think> marked special, as the fixture
// had them before issue 39, the test model's reasoning tags are generated
// and counted but never reach the text, so npud sees no reasoning, as on
// the real runtime; with them not special (Qwen3's tokenizer.json, the
// fixture now) the reasoning is there.
func TestTestLibrarySkipsSpecialTokensInItsAnswer(t *testing.T) {
	models := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(models, "tiny"), os.DirFS(tinyModel)))
	require.NoError(t, os.CopyFS(filepath.Join(models, "special-tags"), os.DirFS(tinyModel)))
	file := filepath.Join(models, "special-tags", "tokenizer.json")
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	var tj map[string]any
	require.NoError(t, json.Unmarshal(raw, &tj))
	marked := 0
	for _, a := range tj["added_tokens"].([]any) {
		token := a.(map[string]any)
		if c := token["content"]; c == "<think>" || c == "</think>" {
			token["special"] = true
			marked++
		}
	}
	require.Equal(t, 2, marked)
	raw, err = json.Marshal(tj)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, raw, 0o644))

	_, r := newTestEngine(t, "CPU", Config{ModelsDir: models, Device: "CPU"})
	yes := true
	answer := func(model string) npu.Answer {
		s, err := r.Start(&npu.Request{Model: model, Prompt: "Say hello", Think: &yes, Sampling: npu.Sampling{Seed: seed(7)}})
		require.NoError(t, err)
		defer s.Close()
		a, err := npu.CollectAnswer(t.Context(), s.Next)
		require.NoError(t, err)
		return a
	}
	plain, special := answer("tiny"), answer("special-tags")
	assert.NotEmpty(t, plain.Reasoning, "the tags are text: the reasoning is found")
	assert.Empty(t, special.Reasoning, "the tags are skipped: no reasoning is found")
	assert.NotContains(t, special.Text, "<think>")
	assert.Contains(t, special.Text, plain.Reasoning, "the reasoning's words are plain text")
	assert.Equal(t, plain.Result.CompletionTokens, special.Result.CompletionTokens, "the skipped tokens are generated and counted")
}

// GenAI starts every generation config from the folder's
// generation_config.json and fails on one that is not JSON (the
// GenerationConfig constructor, src/cpp/src/generation_config.cpp): so
// does the test library (the conformance suite compares what max_new_tokens
// and max_length there do with the real runtime).
func TestTestLibraryReadsTheGenerationConfig(t *testing.T) {
	models := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(models, "broken"), os.DirFS(tinyModel)))
	require.NoError(t, os.WriteFile(filepath.Join(models, "broken", "generation_config.json"), []byte(`{"max_new_tokens": 3,}`), 0o644))
	_, r := newTestEngine(t, "CPU", Config{ModelsDir: models, Device: "CPU"})
	s, err := r.Start(&npu.Request{Model: "broken", Prompt: "Say hello"})
	if err == nil {
		_, err = npu.CollectAnswer(t.Context(), s.Next)
		s.Close()
	}
	require.Error(t, err, "a generation_config.json that is not JSON fails the pipeline")
}
