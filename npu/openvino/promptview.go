//go:build cgo

package openvino

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/npud/npud/npu/modelstore"
)

// A prompt view is how a prompt npud rendered reaches GenAI's pipeline
// untouched. GenAI templates a plain string prompt when the generation
// config's apply_chat_template is set (its default) and the tokenizer has
// a chat template, then encodes the result with add_special_tokens(false);
// without a template it encodes the string with add_special_tokens(true),
// which puts a second BOS before a prompt that already begins with one
// (src/cpp/src/llm/pipeline_stateful.cpp and pipeline_static.cpp: generate
// with a string input; continuous_batching/pipeline_base.cpp the same).
// apply_chat_template can be turned off only through a property map (the
// C API has no setter: src/c/include/openvino/genai/c/generation_config.h),
// so npud keeps it on and gives the pipeline a template that renders the
// prompt as it is: the single user message GenAI wraps a string in,
// nothing added. The template GenAI uses is the tokenizer IR's rt_info
// chat_template when there is one (tokenizer_impl.cpp: setup_tokenizer,
// parse_chat_template_from_tokenizer), so the view is the model's folder
// with every file linked but openvino_tokenizer.xml, whose copy carries
// that template. GenAI reads the linked model into an ov::Model and
// compiles that (src/cpp/src/llm/pipeline.cpp: utils::read_model;
// src/cpp/src/utils.cpp: compile_model(model, "NPU", …)), and OpenVINO
// keys a compiled model's cache on the model itself, so an NPU's blob in
// CACHE_DIR is the model's, whichever folder it was read from.
const passThroughTemplate = "{% for message in messages %}{{ message.content }}{% endfor %}"

// maxTokenizerIR bounds the tokenizer IR read for the view (the vocabulary
// is in the .bin; the XML is a graph of a few hundred kB).
const maxTokenizerIR = 64 << 20

// makePromptView builds the view of the model folder dir in a new private
// folder and returns it; remove it with os.RemoveAll once the pipeline is
// freed.
func makePromptView(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	ir, err := readIR(filepath.Join(abs, modelstore.TokenizerIR))
	if err != nil {
		return "", err
	}
	patched, err := withChatTemplate(ir, passThroughTemplate)
	if err != nil {
		return "", fmt.Errorf("%s: %w", modelstore.TokenizerIR, err)
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return "", err
	}
	view, err := os.MkdirTemp("", "npud-prompt-view-")
	if err != nil {
		return "", err
	}
	fail := func(err error) (string, error) {
		_ = os.RemoveAll(view) // ours, half made
		return "", fmt.Errorf("the prompt view of %s: %w", filepath.Base(abs), err)
	}
	for _, e := range entries {
		if e.Name() == modelstore.TokenizerIR {
			continue
		}
		if err := os.Symlink(filepath.Join(abs, e.Name()), filepath.Join(view, e.Name())); err != nil {
			return fail(err)
		}
	}
	if err := os.WriteFile(filepath.Join(view, modelstore.TokenizerIR), patched, 0o600); err != nil {
		return fail(err)
	}
	return view, nil
}

func readIR(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only
	b, err := io.ReadAll(io.LimitReader(f, maxTokenizerIR+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxTokenizerIR {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxTokenizerIR)
	}
	return b, nil
}

// withChatTemplate is the IR with its rt_info chat_template replaced by
// template, or added when it has none.
func withChatTemplate(ir []byte, template string) ([]byte, error) {
	var esc bytes.Buffer
	if err := xml.EscapeText(&esc, []byte(template)); err != nil {
		return nil, err
	}
	element := []byte(`<chat_template value="` + esc.String() + `" />`)
	if start := bytes.Index(ir, []byte("<chat_template ")); start >= 0 {
		end := bytes.Index(ir[start:], []byte("/>"))
		if end < 0 {
			return nil, fmt.Errorf("its rt_info chat_template element does not end")
		}
		return concat(ir[:start], element, ir[start+end+2:]), nil
	}
	if at := bytes.LastIndex(ir, []byte("</rt_info>")); at >= 0 {
		return concat(ir[:at], element, ir[at:]), nil
	}
	if at := bytes.LastIndex(ir, []byte("</net>")); at >= 0 {
		return concat(ir[:at], []byte("<rt_info>"), element, []byte("</rt_info>"), ir[at:]), nil
	}
	return nil, fmt.Errorf("not an OpenVINO IR (no </net>)")
}

func concat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
