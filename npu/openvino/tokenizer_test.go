//go:build cgo

package openvino

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
)

// tokenizerFolder makes a model folder whose openvino_tokenizer.xml adds
// the special tokens of template (openvino-tokenizers' rt_info
// processed_post_processor_template: -1 is the text), or nothing when
// template is "".
func tokenizerFolder(t testing.TB, template string) string {
	t.Helper()
	dir := t.TempDir()
	xml := "<net/>"
	if template != "" {
		xml = `<net><rt_info><processed_post_processor_template value="{&quot;single&quot;: {&quot;ids&quot;: ` +
			template + `, &quot;type_ids&quot;: [0]}}" /></rt_info></net>`
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "openvino_model.xml"), []byte("<net/>"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "openvino_tokenizer.xml"), []byte(xml), 0o644))
	return dir
}

func openTestTokenizer(t testing.TB, folder string, opts TokenizerOptions) *ModelTokenizer {
	t.Helper()
	tok, err := testLib.OpenTokenizer(context.Background(), folder, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tok.Close() })
	return tok
}

// Issue 39 item 1: a model's tokenizer through the core C API counts text
// as the (test) GenAI prefills it, without the special tokens the IR adds
// on its own, whatever they are.
func TestModelTokenizerCounts(t *testing.T) {
	texts := []struct {
		name, text string
		want       int
	}{
		{"empty", "", 0},
		{"one word", "hello", 1},
		{"words", "the npu answers quickly", 4},
		{"whitespace around", "  spaced\tout\n\nwords  ", 3},
		{"templated", "<|im_start|>user\nSay hello<|im_end|>\n<|im_start|>assistant\n", 4},
		{"non-ASCII", "café 日本 🙂 naïve", 4},
	}
	for _, ir := range []struct{ name, template string }{
		{"adds nothing", ""},
		{"adds nothing, said so", "[-1]"},
		{"a BOS", "[1, -1]"},
		{"BOS and EOS", "[1, -1, 2]"},
		{"an EOS", "[-1, 2]"},
		{"two in front", "[7, 7, -1]"},
	} {
		t.Run(ir.name, func(t *testing.T) {
			tok := openTestTokenizer(t, tokenizerFolder(t, ir.template), TokenizerOptions{})
			for _, tc := range texts {
				n, err := tok.Count(t.Context(), tc.text)
				require.NoError(t, err, tc.name)
				assert.Equal(t, tc.want, n, tc.name)
				ids, err := tok.Encode(t.Context(), tc.text)
				require.NoError(t, err, tc.name)
				assert.Len(t, ids, tc.want, tc.name)
				for _, id := range ids {
					assert.GreaterOrEqual(t, id, int64(100), "%s: a special token's id left in %v", tc.name, ids)
				}
			}
		})
	}
}

// The test library's GenAI counts a prompt with the same function as its
// tokenizer IR (ovtest_tokenize): npud's count of a prompt is the
// num_input_tokens a generation reports for it.
func TestModelTokenizerCountsWhatGenAIPrefills(t *testing.T) {
	models := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(models, "plain"), os.DirFS(tokenizerFolder(t, "[1, -1]"))))
	_, r := newTestEngine(t, "CPU", Config{ModelsDir: models, Device: "CPU"})
	tok := openTestTokenizer(t, filepath.Join(models, "plain"), TokenizerOptions{})
	for _, prompt := range []string{"one", "a prompt of several words", "café 日本\n\tand  more"} {
		_, res, err := run(t, r, &npu.Request{Model: "plain", Prompt: prompt})
		require.NoError(t, err)
		n, err := tok.Count(t.Context(), prompt)
		require.NoError(t, err)
		assert.Equal(t, res.PromptTokens, n, "%q", prompt)
	}
}

func TestModelTokenizerRefuses(t *testing.T) {
	tok := openTestTokenizer(t, tokenizerFolder(t, "[1, -1]"), TokenizerOptions{MaxBytes: 64})

	_, err := tok.Count(t.Context(), strings.Repeat("x ", 33))
	require.ErrorIs(t, err, ErrTextTooLong)
	assert.Contains(t, err.Error(), "66 bytes, over the tokenizer's limit of 64")
	n, err := tok.Count(t.Context(), strings.Repeat("x ", 32))
	require.NoError(t, err, "at the limit")
	assert.Equal(t, 32, n)

	_, err = tok.Count(t.Context(), "a\x00b")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "NUL byte at 1")

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = tok.Count(ctx, "hello")
	require.ErrorIs(t, err, context.Canceled)
	n, err = tok.Count(t.Context(), "still counts")
	require.NoError(t, err)
	assert.Equal(t, 2, n)
}

// A context that ends while the native inference runs cancels it
// (ov_infer_request_cancel): the call returns, and the tokenizer counts
// the next text. The test library's tokenizer never finishes a text
// holding OVTEST_HANG_TOKENIZE.
func TestModelTokenizerCancelsARunningEncode(t *testing.T) {
	tok := openTestTokenizer(t, tokenizerFolder(t, ""), TokenizerOptions{})
	cancelled := testHook("ovtest_tokenizer_cancelled")
	ctx, cancel := context.WithCancelCause(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := tok.Count(ctx, "OVTEST_HANG_TOKENIZE")
		errc <- err
	}()
	require.Eventually(t, func() bool { return testHook("ovtest_tokenizer_running") == 1 }, 10*time.Second, time.Millisecond,
		"the native inference started")
	gone := errors.New("the client went away")
	cancel(gone)
	select {
	case err := <-errc:
		require.ErrorIs(t, err, gone)
	case <-time.After(10 * time.Second):
		t.Fatal("Count did not return after its context ended")
	}
	assert.Equal(t, cancelled+1, testHook("ovtest_tokenizer_cancelled"), "the inference was cancelled, not left running")
	assert.Zero(t, testHook("ovtest_tokenizer_running"))
	n, err := tok.Count(t.Context(), "after the cancel")
	require.NoError(t, err)
	assert.Equal(t, 3, n)

	// The same through the tokenizer's own bound.
	bounded := openTestTokenizer(t, tokenizerFolder(t, ""), TokenizerOptions{Timeout: 50 * time.Millisecond})
	_, err = bounded.Count(t.Context(), "OVTEST_HANG_TOKENIZE")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, cancelled+2, testHook("ovtest_tokenizer_cancelled"))
}

func TestModelTokenizerOpenFails(t *testing.T) {
	// A model folder without openvino_tokenizer.xml: read_model fails, as
	// the real core's does.
	dir := tokenizerFolder(t, "")
	require.NoError(t, os.Remove(filepath.Join(dir, "openvino_tokenizer.xml")))
	_, err := testLib.OpenTokenizer(context.Background(), dir, TokenizerOptions{})
	require.ErrorIs(t, err, ErrNoModelTokenizer)
	var status *StatusError
	require.ErrorAs(t, err, &status)
	assert.Equal(t, "ov_core_read_model", status.Call)
	assert.Contains(t, err.Error(), "ir: Could not open the file")

	// Without the openvino-tokenizers library there is nothing to count with.
	lib := *testLib
	lib.TokenizersFile, lib.TokenizersErr = "", nil
	_, err = lib.OpenTokenizer(context.Background(), tokenizerFolder(t, ""), TokenizerOptions{})
	require.ErrorIs(t, err, ErrTokenizersNotFound)
	lib.TokenizersFile = filepath.Join(t.TempDir(), "libopenvino_tokenizers.so")
	_, err = lib.OpenTokenizer(context.Background(), tokenizerFolder(t, ""), TokenizerOptions{})
	require.ErrorAs(t, err, &status)
	assert.Equal(t, "ov_core_add_extension", status.Call)
	assert.Zero(t, testLiveObjects(), "a failed open frees what it made")
}

func TestModelTokenizerClose(t *testing.T) {
	tok, err := testLib.OpenTokenizer(context.Background(), tokenizerFolder(t, ""), TokenizerOptions{})
	require.NoError(t, err)
	require.NoError(t, tok.Close())
	assert.Zero(t, testLiveObjects(), "Close freed the core, the compiled model and the request")
	require.ErrorIs(t, tok.Close(), ErrTokenizerClosed, "a second Close")
	_, err = tok.Count(t.Context(), "after Close")
	require.ErrorIs(t, err, ErrTokenizerClosed)
	_, err = tok.Encode(t.Context(), "after Close")
	require.ErrorIs(t, err, ErrTokenizerClosed)
}

// Concurrent callers share the one infer request in turn, each getting
// its own text's count, and a Close in the middle ends the rest cleanly.
func TestModelTokenizerConcurrent(t *testing.T) {
	tok, err := testLib.OpenTokenizer(context.Background(), tokenizerFolder(t, "[1, -1]"), TokenizerOptions{})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			text := strings.Repeat("w ", i+1)
			for range 50 {
				n, err := tok.Count(context.Background(), text)
				if errors.Is(err, ErrTokenizerClosed) {
					return
				}
				if !assert.NoError(t, err) || !assert.Equal(t, i+1, n) {
					return
				}
			}
		})
	}
	require.NoError(t, tok.Close())
	wg.Wait()
	assert.Zero(t, testLiveObjects())
}

// BenchmarkModelTokenizerCount counts a templated prompt of some 60 words
// with the test library's tokenizer: the binding's own cost per Count
// (the cgo crossings, the string tensor, the wait), not a real
// tokenizer's (BenchmarkOfficialModelTokenizerCount).
func BenchmarkModelTokenizerCount(b *testing.B) {
	tok := openTestTokenizer(b, tokenizerFolder(b, "[1, -1]"), TokenizerOptions{})
	text := benchmarkPrompt
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tok.Count(b.Context(), text); err != nil {
			b.Fatal(err)
		}
	}
}

// benchmarkPrompt is a Qwen-style templated conversation.
const benchmarkPrompt = "<|im_start|>system\nYou are a helpful assistant. Answer briefly and cite nothing you cannot check.<|im_end|>\n" +
	"<|im_start|>user\nWhat does an NPU do that a CPU does not, and when is it worth using one for a small model?<|im_end|>\n" +
	"<|im_start|>assistant\nIt runs matrix work at low power; for a small model it frees the CPU.<|im_end|>\n" +
	"<|im_start|>user\nAnd the first token's latency?<|im_end|>\n<|im_start|>assistant\n"
