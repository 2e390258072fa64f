//go:build cgo

package openvino

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// realTokenizerCore loads the real OpenVINO core C library from the pinned
// wheels, with the openvino-tokenizers library of its wheel: what a worker
// has once GenAI's C library is loaded (Library.TokenizersFile; the core
// alone does not look for it).
func realTokenizerCore(t testing.TB) (venv string, lib *Library) {
	t.Helper()
	venv, site := realVenv(t)
	lib, err := OpenCore(LibraryOptions{Getenv: envOf("VIRTUAL_ENV", venv)})
	require.NoError(t, err)
	require.Nil(t, lib.api.tokenizer_missing, "the 2026.4.1 core has every function the tokenizer calls")
	lib.TokenizersFile = findLibrary([]string{filepath.Join(site, "openvino_tokenizers", "lib")}, "libopenvino_tokenizers.so")
	require.NotEmpty(t, lib.TokenizersFile)
	return venv, lib
}

// genaiIDs asks the official GenAI tokenizer (genai_tokenizer.py) for each
// text's ids without the special tokens its IR adds, as GenAI's pipelines
// encode a templated prompt, and with them.
func genaiIDs(t testing.TB, venv, folder string, texts []string) (without, with [][]int64) {
	t.Helper()
	in, err := json.Marshal(texts)
	require.NoError(t, err)
	cmd := exec.CommandContext(context.Background(), filepath.Join(venv, "bin", "python"), tokenizerScript(), "encode", folder)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s", stderr.String())
	var got struct{ Without, With [][]int64 }
	require.NoError(t, json.Unmarshal(out, &got))
	require.Len(t, got.Without, len(texts))
	return got.Without, got.With
}

func tokenizerScript() string {
	return filepath.Join("..", "..", "testdata", "openvino", "tokenizer", "genai_tokenizer.py")
}

// withSpecialTokens copies the tiny model with a tokenizer that adds BOS
// (1) before every text and EOS (2) after it, as a Llama-style converted
// tokenizer adds its BOS; the tiny model's own adds nothing.
func withSpecialTokens(t testing.TB, venv string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "bos-eos")
	cmd := exec.CommandContext(context.Background(), filepath.Join(venv, "bin", "python"), tokenizerScript(), "add-special", tinyModel, out, "1", "2")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	return out
}

// qwenConversation is a whole conversation as the tiny model's Qwen-style
// template renders it: system prompt with tools, a call, its result,
// thinking closed, the generation prompt.
const qwenConversation = "<|im_start|>system\nYou are terse.\n\n# Tools\n\nYou may call these functions:\n<tools>\n" +
	`{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}` +
	"\n</tools>\n\nWrite a call as <tool_call>{\"name\": NAME, \"arguments\": ARGS}</tool_call>.<|im_end|>\n" +
	"<|im_start|>user\nWhat's the weather in Zürich?<|im_end|>\n" +
	"<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\"}}\n</tool_call><|im_end|>\n" +
	"<|im_start|>user\n<tool_response>\n{\"temp_c\": 21}\n</tool_response><|im_end|>\n" +
	"<|im_start|>assistant\n<think>\n\n</think>\n\n"

// Issue 39 item 1: on the real runtime (the pinned wheels' core C library
// and openvino-tokenizers, the tiny model's openvino_tokenizer.xml), npud's
// ids for a text are the official GenAI tokenizer's
// encode(text, add_special_tokens=False): what GenAI prefills for a
// templated prompt. With a tokenizer that adds BOS and EOS, the IR's own
// ids carry them and npud's do not.
func TestOfficialModelTokenizer(t *testing.T) {
	venv, lib := realTokenizerCore(t)
	texts := []string{
		"",
		"Say hello",
		"<|im_start|>user\nSay hello<|im_end|>\n<|im_start|>assistant\n",
		"<|im_start|><|im_end|><|im_start|>",
		qwenConversation,
		"café 日本 🙂 naïve — ü\u00a0ß",
		"  \n\n\t leading and trailing whitespace \n ",
		strings.Repeat(qwenConversation, 200), // some 100 kB
	}
	for _, folder := range []struct{ name, dir string }{
		{"the tiny model", tinyModel},
		{"a tokenizer adding BOS and EOS", withSpecialTokens(t, venv)},
	} {
		t.Run(folder.name, func(t *testing.T) {
			want, withSpecial := genaiIDs(t, venv, folder.dir, texts)
			tok, err := lib.OpenTokenizer(context.Background(), folder.dir, TokenizerOptions{})
			require.NoError(t, err)
			defer func() { require.NoError(t, tok.Close()) }()
			for i, text := range texts {
				name := text
				if len(name) > 40 {
					name = name[:40] + "…"
				}
				ids, err := tok.Encode(t.Context(), text)
				require.NoError(t, err, "%q", name)
				assert.Equal(t, want[i], append([]int64{}, ids...), "%q: npud's ids are GenAI's without special tokens", name)
				n, err := tok.Count(t.Context(), text)
				require.NoError(t, err)
				assert.Equal(t, len(want[i]), n, "%q", name)
				raw, err := tok.encodeRaw(t.Context(), text)
				require.NoError(t, err)
				assert.Equal(t, withSpecial[i], raw, "%q: the IR adds its special tokens itself", name)
			}
			t.Logf("special tokens the IR adds: before %v, after %v", tok.prefix, tok.suffix)
		})
	}
}

// The real core refuses what the test library refuses, at the same step
// with the same status, and cancels a running encode.
func TestOfficialModelTokenizerFailures(t *testing.T) {
	_, lib := realTokenizerCore(t)
	// The message is per thread: each open reads its own on one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	missing := t.TempDir()
	_, realErr := lib.OpenTokenizer(context.Background(), missing, TokenizerOptions{})
	_, testErr := testLib.OpenTokenizer(context.Background(), missing, TokenizerOptions{})
	for _, err := range []error{realErr, testErr} {
		require.ErrorIs(t, err, ErrNoModelTokenizer)
	}
	var realStatus, testStatus *StatusError
	require.ErrorAs(t, realErr, &realStatus)
	require.ErrorAs(t, testErr, &testStatus)
	assert.Equal(t, realStatus.Call, testStatus.Call)
	assert.Equal(t, realStatus.Status, testStatus.Status)
	assert.Equal(t, realErr.Error(), testErr.Error(), "the same words, the core's last line")

	// A text that takes the real tokenizer far longer than the bound (a
	// few MB of BPE): the inference is cancelled, the caller gets the
	// deadline, and the request counts the next text.
	tok, err := lib.OpenTokenizer(context.Background(), tinyModel, TokenizerOptions{Timeout: time.Millisecond})
	require.NoError(t, err)
	defer func() { require.NoError(t, tok.Close()) }()
	_, err = tok.Count(t.Context(), strings.Repeat(qwenConversation, 5000)) // some 3.5 MB
	require.ErrorIs(t, err, context.DeadlineExceeded)
	n, err := tok.Count(t.Context(), "Say hello")
	require.NoError(t, err)
	assert.Positive(t, n)
}

// BenchmarkOfficialModelTokenizerCount counts a templated conversation of
// some 150 tokens with the tiny model's real tokenizer (skipped without
// the pinned wheels, like every test against the real runtime).
func BenchmarkOfficialModelTokenizerCount(b *testing.B) {
	_, lib := realTokenizerCore(b)
	tok, err := lib.OpenTokenizer(context.Background(), tinyModel, TokenizerOptions{})
	require.NoError(b, err)
	defer func() { _ = tok.Close() }()
	for _, size := range []struct {
		name string
		text string
	}{{"conversation", qwenConversation}, {"conversation x50", strings.Repeat(qwenConversation, 50)}} {
		b.Run(size.name, func(b *testing.B) {
			b.SetBytes(int64(len(size.text)))
			n := 0
			for b.Loop() {
				var err error
				if n, err = tok.Count(b.Context(), size.text); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n), "tokens")
		})
	}
}
