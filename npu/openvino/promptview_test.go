//go:build cgo

package openvino

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu/modelstore"
)

// tinyModel is the project's tiny model (testdata/openvino/tinymodel).
const tinyModel = "../../testdata/openvino/tinymodel/model"

// Issue 39 item 4: the prompt view is the model's folder with its files
// linked and a tokenizer IR whose rt_info template renders a prompt as it
// is; the model's own folder is untouched.
func TestPromptViewCarriesThePassThroughTemplate(t *testing.T) {
	ownTemplate, ownSource := modelstore.ChatTemplate(tinyModel)
	require.NotEmpty(t, ownTemplate)
	view, err := makePromptView(tinyModel)
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(view) })

	text, source := modelstore.ChatTemplate(view)
	assert.Equal(t, passThroughTemplate, text)
	assert.Equal(t, modelstore.TokenizerIR+" rt_info", source)
	again, againSource := modelstore.ChatTemplate(tinyModel)
	assert.Equal(t, ownTemplate, again, "the model's own folder is untouched")
	assert.Equal(t, ownSource, againSource)

	entries, err := os.ReadDir(tinyModel)
	require.NoError(t, err)
	for _, e := range entries {
		st, err := os.Lstat(filepath.Join(view, e.Name()))
		require.NoError(t, err, e.Name())
		if e.Name() == modelstore.TokenizerIR {
			assert.True(t, st.Mode().IsRegular(), "the tokenizer IR is a copy")
			continue
		}
		assert.Equal(t, os.ModeSymlink, st.Mode()&os.ModeSymlink, "%s is linked", e.Name())
	}
	st, err := os.Stat(view)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), st.Mode().Perm(), "a private folder")
}

func TestWithChatTemplate(t *testing.T) {
	for _, tc := range []struct {
		name, ir, want string
		fails          bool
	}{
		{"replaced", `<net><rt_info><a value="1" /><chat_template value="old &amp; &lt;x>" /><b value="2" /></rt_info></net>`,
			`<net><rt_info><a value="1" /><chat_template value="T&amp;&lt;&#34;" /><b value="2" /></rt_info></net>`, false},
		{"added to rt_info", `<net><rt_info><a value="1" /></rt_info></net>`,
			`<net><rt_info><a value="1" /><chat_template value="T&amp;&lt;&#34;" /></rt_info></net>`, false},
		{"rt_info added", `<net><layers /></net>`,
			`<net><layers /><rt_info><chat_template value="T&amp;&lt;&#34;" /></rt_info></net>`, false},
		{"not an IR", `<html></html>`, "", true},
		{"cut short", `<net><rt_info><chat_template value="x`, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := withChatTemplate([]byte(tc.ir), `T&<"`)
			if tc.fails {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
			// What npud reads back is the template given.
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, modelstore.TokenizerIR), bytes.ReplaceAll(got, []byte("><"), []byte(">\n<")), 0o600))
			text, ok := modelstore.RTInfoChatTemplate(filepath.Join(dir, modelstore.TokenizerIR))
			assert.True(t, ok)
			assert.Equal(t, `T&<"`, text)
		})
	}
}

// The official GenAI prefills a rendered prompt given to the view exactly
// as it prefills the conversation it templates itself: the same greedy
// answer, the same number of input tokens, and that number is the text's
// own count through the tokenizer (add_special_tokens off).
func TestOfficialPromptViewPrefillsTheTextAsIs(t *testing.T) {
	venv, _ := realVenv(t)
	view, err := makePromptView(tinyModel)
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(view) })
	cmd := exec.CommandContext(t.Context(), filepath.Join(venv, "bin", "python"),
		"../../testdata/openvino/promptview_check.py", tinyModel, view)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	sc := bufio.NewScanner(bytes.NewReader(out))
	n := 0
	for sc.Scan() {
		var r struct {
			ViewTemplate  string `json:"view_template"`
			OwnAnswer     string `json:"own_answer"`
			ViewAnswer    string `json:"view_answer"`
			OwnPrefilled  int    `json:"own_prefilled"`
			ViewPrefilled int    `json:"view_prefilled"`
			Encoded       int    `json:"encoded"`
		}
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue // GenAI's own notes on stdout
		}
		n++
		assert.Equal(t, passThroughTemplate, r.ViewTemplate)
		assert.Equal(t, r.OwnAnswer, r.ViewAnswer)
		assert.Equal(t, r.OwnPrefilled, r.ViewPrefilled)
		assert.Equal(t, r.Encoded, r.ViewPrefilled)
		assert.Greater(t, r.ViewPrefilled, 10, "a templated prompt, not the bare words")
	}
	assert.Equal(t, 2, n, "every conversation checked: %s", out)
}

// Issue 39: for every family's reference corpus (the published templates'
// renderings, testdata/chattemplates/golden), the count npud makes with
// the model's tokenizer through the real core C API equals what the
// official GenAI prefills for that text through the prompt view (here
// with the tiny model's tokenizer, which reads every family's markers as
// text).
func TestOfficialEveryFamilysCorpusCountsAsGenAIPrefills(t *testing.T) {
	venv, lib := realTokenizerCore(t)
	tok, err := lib.OpenTokenizer(context.Background(), tinyModel, TokenizerOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tok.Close() })
	view, err := makePromptView(tinyModel)
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(view) })

	files, err := filepath.Glob("../../testdata/chattemplates/golden/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var texts, names []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var g struct {
			Cases []struct {
				Name string  `json:"name"`
				Text *string `json:"text"`
			} `json:"cases"`
		}
		require.NoError(t, json.Unmarshal(b, &g))
		for _, c := range g.Cases {
			if c.Text != nil {
				texts, names = append(texts, *c.Text), append(names, filepath.Base(f)+"/"+c.Name)
			}
		}
	}
	in, err := json.Marshal(texts)
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), filepath.Join(venv, "bin", "python"),
		"../../testdata/openvino/promptview_check.py", "--prefill", view)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	var prefilled []int
	require.NoError(t, json.Unmarshal(out, &prefilled))
	require.Len(t, prefilled, len(texts))
	for i, text := range texts {
		n, err := tok.Count(t.Context(), text)
		require.NoError(t, err, names[i])
		assert.Equal(t, prefilled[i], n, names[i])
	}
}
