package npu

import "fmt"

// CompletionLimit is npud's one rule for a completion limit (OpenAI's
// max_tokens and max_completion_tokens, Ollama's num_predict) against a
// model's context, used by every engine that can count the prompt and by
// the pool: a limit larger than the room the prompt leaves is lowered to
// that room (clamped reports it), as Ollama and llama.cpp generate up to
// what fits instead of refusing; no limit (0) means that room. Only a
// prompt that leaves no room for one token is an error (ErrContextLength);
// a negative limit is one too (the API layers refuse it first).
func CompletionLimit(maxTokens, promptTokens, contextLength int) (limit int, clamped bool, err error) {
	if maxTokens < 0 {
		return 0, false, &InvalidRequestError{Param: "max_tokens", Message: fmt.Sprintf("'max_tokens' must be at least 1, got %d", maxTokens)}
	}
	room := contextLength - promptTokens
	if room < 1 {
		return 0, false, fmt.Errorf("the prompt of %d tokens leaves no room for a completion in the context of %d tokens: %w",
			promptTokens, contextLength, ErrContextLength)
	}
	if maxTokens == 0 {
		return room, false, nil
	}
	if maxTokens > room {
		return room, true, nil
	}
	return maxTokens, false, nil
}

// RequestContext is the context a request runs in: the model's, or the
// request's own (Ollama's num_ctx) when that is smaller.
func RequestContext(req *Request, model int) int {
	if req.ContextLength > 0 && (model <= 0 || req.ContextLength < model) {
		return req.ContextLength
	}
	return model
}
