//go:build cgo

package openvino

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/chatfmt"
	"github.com/npud/npud/npu/jsonschema"
)

// maxFormatRestarts bounds how often a structured answer is resumed after
// the model wrote something its schema does not allow.
const maxFormatRestarts = 64

// A structured answer on a model whose prompts npud renders is held to its
// schema as it is generated. GenAI's C API has no constrained decoding
// (its StructuredOutputConfig is C++ only:
// src/cpp/include/openvino/genai/generation_config.hpp; nothing in
// src/c/include), so npud checks the streamed text character by
// character (jsonschema.Matcher) and, at the first character the schema
// does not allow, stops the generation, keeps the valid prefix, writes what
// the schema fixes next (a closing quote, the next required key) without
// generating it, and resumes from prompt + prefix: the prefix is the start
// of the assistant's message, continued as an assistant prefill is. Each
// resume prefills again; GenAI's prefix cache (CPU/GPU) and NPUW's prefix
// caching (NPU) find the prompt's blocks. Reasoning is off for such an
// answer, and a request that declares tools is held by the bridge only (a
// call is no document).

// formatInstruction is what the prompt asks of the model, in its system
// message, so a cooperative model rarely needs a restart.
func formatInstruction(f *npu.Format) (string, error) {
	if f.Type == npu.FormatJSONObject {
		return "Respond with a JSON object only, and nothing else.", nil
	}
	schema, err := chatfmt.ToJSON(f.Schema)
	if err != nil {
		return "", err
	}
	return "Respond with a JSON object only, and nothing else, valid against this JSON Schema:\n" + schema, nil
}

// withInstruction adds the instruction to the conversation's system
// message, or gives it one.
func withInstruction(msgs []npu.Message, instruction string) []npu.Message {
	out := make([]npu.Message, 0, len(msgs)+1)
	if len(msgs) > 0 && msgs[0].Role == "system" {
		first := msgs[0]
		first.Content = strings.TrimRight(first.Content, "\n") + "\n\n" + instruction
		return append(append(out, first), msgs[1:]...)
	}
	return append(append(out, npu.Message{Role: "system", Content: instruction}), msgs...)
}

// structuredAnswer is one structured answer being generated: the document
// so far (all of it sent), and the text held back (a number in progress,
// which a bound on it may still refuse whole).
type structuredAnswer struct {
	schema  *jsonschema.Schema
	matcher *jsonschema.Matcher
	doc     strings.Builder // the valid text sent to the client
	held    string          // valid text not sent yet
	sink    npu.Sink
	ended   npu.Status // what the client's sink last answered, when not Running
	stopped bool       // this run was answered STOP: text GenAI still flushes is dropped
	// nudged counts the steps nudge took at each length of the document:
	// when the answer comes back to a length (a bound refused the number
	// the step began), the next step is another one.
	nudged map[int]int
}

// runSink is the sink of one generation run: what the schema allows goes
// on, and the run stops at the first byte it does not, at a whole
// document, or when the client's sink stops it.
func (a *structuredAnswer) runSink(text string) npu.Status {
	if a.stopped {
		return npu.Stop
	}
	if a.take(text) {
		return npu.Running
	}
	a.stopped = true
	if a.ended != npu.Running {
		return a.ended
	}
	return npu.Stop
}

// take runs text through the matcher and sends what is valid and final;
// it reports whether the generation should go on.
func (a *structuredAnswer) take(text string) (ok bool) {
	before := a.doc.Len() + len(a.held)
	valid := a.matcher.Push(text)
	keep := a.matcher.ValidLen() - before
	switch {
	case keep < 0: // a bound refused the number held back
		a.held = a.held[:max(len(a.held)+keep, 0)]
		keep = 0
	case keep > len(text):
		keep = len(text)
	}
	a.held += text[:keep]
	send := a.held
	if !a.matcher.Complete() {
		// A number may still be refused whole by a bound, and a
		// character may be cut between chunks: neither is sent yet.
		send = strings.TrimRightFunc(send, isNumberByte)
		send = send[:len(send)-partialRune(send)]
	}
	if send != "" {
		a.held = a.held[len(send):]
		a.doc.WriteString(send)
		if st := a.sink(send); st != npu.Running {
			a.ended = st
			return false
		}
	}
	return valid && !a.matcher.Complete()
}

func isNumberByte(r rune) bool { return r >= '0' && r <= '9' || strings.ContainsRune("-+.eE", r) }

// partialRune is how many bytes at the end of s begin a character that
// has not ended.
func partialRune(s string) int {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				return len(s) - i
			}
			return 0
		}
	}
	return 0
}

// text is the valid document so far: what was sent and what is held.
func (a *structuredAnswer) text() string { return a.doc.String() + a.held }

// restart starts the matcher again on the valid document: after a refusal
// it takes no more text.
func (a *structuredAnswer) restart() {
	// A character the run ended inside of is not part of the document.
	a.held = a.held[:len(a.held)-partialRune(a.held)]
	a.matcher = a.schema.NewMatcher()
	a.matcher.Push(a.text())
}

// closers are the steps npud takes for a model that made no progress at a
// point (greedy decoding from the same prefix writes the same refused
// text again): close what is open, or write the smallest value, where the
// schema allows it; Forced then writes what follows.
var closers = [...]string{`"`, "]", "}", ":", "0", "false", "null", `""`, "[]", "{}"}

// nudgeOrder is the order nudge tries single characters in; whitespace
// is never a step (it brings the document no nearer its end).
const nudgeOrder = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.,;!?'()[]{}<>/@#$%^&*_+=|~`\\\""

// nudge takes the first closer the schema allows after the document, else
// the first letter, digit or other printable character it allows (an
// enum's first letter; an escape last); it reports whether one was.
func (a *structuredAnswer) nudge() bool {
	doc := a.text()
	if a.nudged == nil {
		a.nudged = map[int]int{}
	}
	skip := a.nudged[len(doc)] // steps already taken here that led back here
	for i := range len(closers) + len(nudgeOrder) {
		step := ""
		if i < len(closers) {
			step = closers[i]
		} else {
			step = nudgeOrder[i-len(closers) : i-len(closers)+1]
		}
		m := a.schema.NewMatcher()
		if !m.Push(doc+step) || m.ValidLen() != len(doc)+len(step) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		a.nudged[len(doc)]++
		a.take(step)
		return true
	}
	return false
}

// generateStructured generates a structured answer held to its schema.
func (e *Engine) generateStructured(ctx context.Context, p *pipeline, req *npu.Request, sink npu.Sink,
	limit, promptLimit int) (npu.Result, error) {
	schema := jsonschema.AnyObject()
	if req.Format.Type == npu.FormatJSONSchema {
		closed, err := closedObjects(req.Format.Schema)
		if err == nil {
			schema, err = jsonschema.Compile(closed)
		}
		if err != nil {
			return npu.Result{}, &npu.InvalidRequestError{Param: "response_format", Message: err.Error()}
		}
	}
	instruction, err := formatInstruction(req.Format)
	if err != nil {
		return npu.Result{}, &npu.InvalidRequestError{Param: "response_format", Message: err.Error()}
	}
	msgs := withInstruction(chatMessages(req), instruction)
	off := false
	asked := *req
	asked.Think = &off

	a := &structuredAnswer{schema: schema, matcher: schema.NewMatcher(), sink: sink}
	var total npu.Result
	budget := req.MaxTokens // 0: what the context leaves
	for restarts := 0; ; restarts++ {
		if forced := a.matcher.Forced(); forced != "" && !a.take(forced) && a.ended != npu.Running {
			return e.endStructured(total, a, req, restarts)
		}
		if a.matcher.Complete() {
			return e.endStructured(total, a, req, restarts)
		}
		if restarts > maxFormatRestarts {
			return total, structuredFailed(req, fmt.Sprintf("the model left the schema %d times", restarts-1))
		}
		turn := msgs
		if doc := a.text(); doc != "" {
			turn = append(append([]npu.Message(nil), msgs...), npu.Message{Role: "assistant", Content: doc})
		}
		r, err := p.prompt.fit(ctx, &asked, turn, limit, promptLimit, p.model)
		if err != nil {
			if errors.Is(err, npu.ErrContextLength) && restarts > 0 {
				return total, structuredFailed(req, "the document does not fit in the context")
			}
			var invalid *npu.InvalidRequestError
			if errors.As(err, &invalid) && a.doc.Len()+len(a.held) > 0 {
				// The model's template rewrites the document so far (Qwen3
				// reads a "</think>" in it as the end of reasoning): it
				// cannot be resumed as it is.
				return total, structuredFailed(req, "the model's chat template does not render the document so far as it is, so it cannot be resumed")
			}
			return total, err
		}
		if restarts == 0 {
			total.PromptTokens = r.tokens
		}
		room := limit - r.tokens
		if budget > 0 {
			room = min(room, budget-total.CompletionTokens)
		}
		if room < 1 {
			return total, structuredFailed(req, "max_tokens ended the answer before the document did")
		}
		run := asked
		run.Messages, run.Prompt, run.MaxTokens = nil, r.text, 0
		if budget > 0 {
			run.MaxTokens = room
		} // else the model's own max_new_tokens when smaller than the room
		a.stopped = false
		res, err := p.generate(ctx, &run, a.runSink, room)
		total.CompletionTokens += res.CompletionTokens
		total.CachedPromptTokens += res.CachedPromptTokens
		total.Timings = res.Timings
		if err != nil {
			return total, engineFailure(err)
		}
		if a.ended != npu.Running || a.matcher.Complete() {
			return e.endStructured(total, a, req, restarts)
		}
		// The run ended before the document: the model wrote what the
		// schema does not allow there, or ended its answer (EOS). Resumed
		// from the same prefix a greedy model writes the same again, so
		// npud takes the next step itself (the nearest close the schema
		// allows), then the model goes on.
		a.restart()
		if !a.nudge() && a.ended == npu.Running {
			return total, structuredFailed(req, "the model writes nothing the schema allows here")
		}
		if a.ended != npu.Running {
			return e.endStructured(total, a, req, restarts)
		}
	}
}

// endStructured ends a structured answer: the client stopped it, or the
// document is whole.
func (e *Engine) endStructured(total npu.Result, a *structuredAnswer, req *npu.Request, restarts int) (npu.Result, error) {
	if a.ended == npu.Cancel {
		total.FinishReason = npu.FinishCancelled
		return total, nil
	}
	if a.held != "" && a.ended == npu.Running {
		if st := a.sink(a.held); st != npu.Running {
			a.ended = st
		}
	}
	total.FinishReason = npu.FinishStop
	total.FormatResumes = restarts
	e.log.Debug("structured answer", "model", req.Model, "bytes", a.doc.Len(), "resumes", restarts)
	return total, nil
}

func structuredFailed(req *npu.Request, why string) error {
	return fmt.Errorf("model %q could not write an answer valid against the requested format: %s: %w", req.Model, why, npu.ErrStructuredOutput)
}
