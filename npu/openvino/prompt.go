//go:build cgo

package openvino

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/chatfmt"
	"github.com/npud/npud/npu/modelstore"
)

// tokenCounter counts text as the model's own tokenizer encodes a
// templated prompt (add_special_tokens off).
type tokenCounter interface {
	Count(ctx context.Context, text string) (int, error)
	Close() error
}

// prompter renders a model's conversations itself, with the renderer of
// its chat template (npu/chatfmt), and counts them with the model's own
// tokenizer, so that npud knows the prompt's exact size before anything
// runs. Its pipeline reads the model through a prompt view
// (makePromptView), so GenAI prefills exactly the rendered text.
type prompter struct {
	template chatfmt.Template
	specials chatfmt.Specials
	counter  tokenCounter
	view     string // the prompt view's folder, removed on close
}

// newPrompter is the prompter for the model in dir, or nil with the reason
// when npud does not render its template (GenAI then renders it, as
// before): no template, one npud does not reproduce, a vision model (its
// images go with GenAI's own history), or a template that needs a special
// token's text npud cannot read.
func newPrompter(ctx context.Context, dir string, open func(ctx context.Context, dir string) (tokenCounter, error)) (*prompter, string, error) {
	if modelstore.HasVisionEncoder(dir) {
		return nil, "a vision model: GenAI renders its images' placeholders", nil
	}
	text, source := modelstore.ChatTemplate(dir)
	if text == "" {
		return nil, "no chat template", nil
	}
	tpl, err := chatfmt.RendererFor(text)
	if errors.Is(err, chatfmt.ErrUnknownTemplate) {
		return nil, fmt.Sprintf("its chat template (%s) is not one npud renders", source), nil
	}
	if err != nil {
		return nil, "", err
	}
	sp := modelstore.ReadSpecialTokens(dir)
	if strings.Contains(text, "bos_token") && sp.BOS == "" {
		return nil, "its template writes a BOS token whose text the folder does not give", nil
	}
	if open == nil {
		return nil, "no tokenizer to count with", nil
	}
	counter, err := open(ctx, dir)
	if err != nil {
		return nil, "", fmt.Errorf("the model's tokenizer (%s), which npud counts prompts with: %w", modelstore.TokenizerIR, err)
	}
	view, err := makePromptView(dir)
	if err != nil {
		_ = counter.Close() // not used
		return nil, "", err
	}
	return &prompter{template: tpl, specials: chatfmt.Specials{BOS: sp.BOS, EOS: sp.EOS, PAD: sp.PAD},
		counter: counter, view: view}, "", nil
}

func (p *prompter) close() error {
	err := p.counter.Close()
	return errors.Join(err, os.RemoveAll(p.view))
}

// renderedPrompt is a conversation rendered and counted.
type renderedPrompt struct {
	text   string
	tokens int
	msgs   []npu.Message // the messages it rendered (fewer than asked when turns were dropped)
}

// render renders and counts the request's conversation. A conversation
// that ends with an assistant's message continues that message (Anthropic's
// prefill, Ollama's continuation): the text ends where its content ends,
// as Hugging Face's continue_final_message does.
func (p *prompter) render(ctx context.Context, req *npu.Request, msgs []npu.Message) (renderedPrompt, error) {
	conv, err := conversationOf(req, msgs)
	if err != nil {
		return renderedPrompt{}, err
	}
	last := msgs[len(msgs)-1]
	prefill := last.Role == "assistant" && last.Content != "" && len(last.ToolCalls) == 0
	conv.AddGenerationPrompt = !prefill
	conv.Specials = p.specials
	text, err := p.template.Render(conv)
	if err != nil {
		var refused *chatfmt.TemplateError
		if errors.As(err, &refused) {
			return renderedPrompt{}, &npu.InvalidRequestError{Param: "messages", Message: err.Error()}
		}
		return renderedPrompt{}, err
	}
	if prefill {
		at := strings.LastIndex(text, last.Content)
		if at < 0 {
			return renderedPrompt{}, &npu.InvalidRequestError{Param: "messages", Message: fmt.Sprintf(
				"the last (assistant) message cannot be continued: the model's chat template (%s) does not render it as it is", p.template.Name)}
		}
		text = text[:at+len(last.Content)]
	}
	n, err := p.counter.Count(ctx, text)
	if err != nil {
		return renderedPrompt{}, fmt.Errorf("counting the prompt with the model's tokenizer: %w", err)
	}
	return renderedPrompt{text: text, tokens: n, msgs: msgs}, nil
}

// conversationOf is the request's conversation as a renderer reads it.
func conversationOf(req *npu.Request, msgs []npu.Message) (chatfmt.Conversation, error) {
	conv := chatfmt.Conversation{Think: req.Think}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type": "object", "properties": {}}`)
		}
		name, _ := json.Marshal(t.Name)        // a string always encodes
		desc, _ := json.Marshal(t.Description) // a string always encodes
		conv.Tools = append(conv.Tools, json.RawMessage(
			`{"type": "function", "function": {"name": `+string(name)+`, "description": `+string(desc)+`, "parameters": `+string(params)+`}}`))
	}
	for _, m := range msgs {
		if len(m.Images) > 0 {
			return chatfmt.Conversation{}, &npu.InvalidRequestError{Param: "images", Message: "the model does not support images: its folder holds no vision encoder"}
		}
		cm := chatfmt.Message{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, Name: m.ToolName}
		for _, c := range m.ToolCalls {
			args := c.Arguments
			if !json.Valid([]byte(args)) {
				b, _ := json.Marshal(args) // a string always encodes: templates get it as text, as GenAI's would
				args = string(b)
			}
			cm.ToolCalls = append(cm.ToolCalls, chatfmt.Call{ID: c.ID, Name: c.Name, Arguments: args})
		}
		conv.Messages = append(conv.Messages, cm)
	}
	return conv, nil
}

// fit renders the conversation and, when it does not leave a token of room
// in limit (or is over the NPU's prompt limit, promptLimit > 0), drops its
// oldest turns when the request allows (Ollama), sized by exact counts,
// or refuses it: a request error, before anything runs.
func (p *prompter) fit(ctx context.Context, req *npu.Request, msgs []npu.Message, limit, promptLimit int, model string) (renderedPrompt, error) {
	fits := func(n int) bool { return n < limit && (promptLimit <= 0 || n <= promptLimit) }
	r, err := p.render(ctx, req, msgs)
	if err != nil {
		return r, err
	}
	if !fits(r.tokens) && req.DropOldestTurns {
		// The fewest oldest messages to drop, found by bisection: fewer
		// messages never count more (a handful of renders and counts
		// however long the history).
		droppable := 0
		for i, m := range msgs {
			if i < len(msgs)-1 && m.Role != "system" {
				droppable++
			}
		}
		lo, hi := 1, droppable // the answer is in [lo, hi], if any fits
		var best *renderedPrompt
		for lo <= hi {
			mid := lo + (hi-lo)/2
			shorter, _ := dropOldestTurns(msgs, mid)
			next, err := p.render(ctx, req, shorter)
			if err != nil {
				return r, err
			}
			if fits(next.tokens) {
				best, hi = &next, mid-1
			} else {
				r, lo = next, mid+1
			}
		}
		if best != nil {
			return *best, nil
		}
	}
	if fits(r.tokens) {
		return r, nil
	}
	what := fmt.Sprintf("the context of %d tokens", limit)
	if promptLimit > 0 && r.tokens > promptLimit {
		what = fmt.Sprintf("the NPU's MAX_PROMPT_LEN of %d tokens (raise it with --npu-max-prompt-len or the model's %s)", promptLimit, modelstore.PropertiesFile)
	} else if req.ContextLength > 0 && req.ContextLength == limit {
		what = fmt.Sprintf("the request's context (num_ctx) of %d tokens", limit)
	}
	return r, fmt.Errorf("model %q: the prompt is %d tokens, which leaves no room for an answer in %s: %w",
		filepath.Base(model), r.tokens, what, npu.ErrContextLength)
}

// generateRendered runs a request on a model whose prompts npud renders:
// the conversation is rendered and counted before anything runs, so one
// that does not fit is a request error (a 400 before any byte), the
// completion is bounded by exactly the room the prompt leaves (the
// request's context, num_ctx, bounded by the model's), and prompt plus
// completion never exceed the context.
func (e *Engine) generateRendered(ctx context.Context, p *pipeline, req *npu.Request, sink npu.Sink) (npu.Result, error) {
	limit := npu.RequestContext(req, e.contextOf(p))
	promptLimit := 0
	if deviceKind(p.device) == "NPU" {
		promptLimit = p.promptLimit
	}
	if req.Format != nil && len(req.Tools) == 0 {
		return e.generateStructured(ctx, p, req, sink, limit, promptLimit)
	}
	r, err := p.prompt.fit(ctx, req, chatMessages(req), limit, promptLimit, p.model)
	if err != nil {
		return npu.Result{}, err
	}
	asked := req.MaxTokens
	room, lowered, err := npu.CompletionLimit(asked, r.tokens, limit)
	if err != nil {
		return npu.Result{}, err
	}
	rendered := *req
	rendered.Messages, rendered.Prompt = nil, r.text
	if asked > 0 {
		rendered.MaxTokens = room
	} // else the model's own max_new_tokens (generation_config.json) when smaller than the room
	res, err := p.generate(ctx, &rendered, sink, room)
	if err != nil {
		return res, engineFailure(err)
	}
	if res.PromptTokens != r.tokens {
		// GenAI counted what it prefilled; npud's count is the same text
		// through the same tokenizer, so they must agree.
		e.log.Warn("GenAI prefilled another number of tokens than npud counted", "model", req.Model,
			"counted", r.tokens, "prefilled", res.PromptTokens)
	}
	if lowered {
		res.MaxTokensClamped = room
	}
	if res.FinishReason == npu.FinishStop && res.CompletionTokens >= room {
		res.FinishReason = npu.FinishLength
	}
	return res, nil
}

// chatMessages is the conversation a request renders: its messages, or
// its plain prompt as one user message, as GenAI templates one.
func chatMessages(req *npu.Request) []npu.Message {
	if len(req.Messages) > 0 {
		return req.Messages
	}
	return []npu.Message{{Role: "user", Content: req.Prompt}}
}

// engineFailure is how a failed generate is reported: a request's fault
// as it is (a 400), anything else as the engine's failure.
func engineFailure(err error) error {
	var invalid *npu.InvalidRequestError
	if errors.As(err, &invalid) {
		return err
	}
	return &npu.EngineError{Engine: "openvino", Cause: err}
}
