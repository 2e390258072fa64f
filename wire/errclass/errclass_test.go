package errclass

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/journal"
)

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want Class
	}{
		{&npu.InvalidRequestError{Param: "top_p", Message: "bad"}, Class{Status: 400, Code: "invalid_value"}},
		{fmt.Errorf("model %q: %w", "x", npu.ErrModelNotFound), Class{Status: 404, Code: "model_not_found"}},
		{npu.ErrContextLength, Class{Status: 400, Code: "context_length_exceeded"}},
		// Issue 13: 501 on one API and 500 on the other before.
		{fmt.Errorf("embeddings: %w", npu.ErrNotSupported), Class{Status: 501, Code: "not_supported"}},
		{npu.ErrTooManyStreams, Class{Status: 429, Code: "too_many_streams", Retryable: true}},
		{npu.ErrQueueFull, Class{Status: 503, Code: "queue_full", Server: true, Retryable: true}},
		{npu.ErrQueueTimeout, Class{Status: 503, Code: "queue_timeout", Server: true, Retryable: true}},
		{npu.ErrShuttingDown, Class{Status: 503, Code: "shutting_down", Server: true, Retryable: true}},
		{npu.ErrSlowConsumer, Class{Status: 503, Code: "slow_consumer", Server: true, Retryable: true}},
		{journal.ErrExpired, Class{Status: 410, Code: "resume_expired"}},
		{journal.ErrAbandoned, Class{Status: 410, Code: "stream_abandoned"}},
		{journal.ErrCancelled, Class{Status: 409, Code: "cancelled"}},
		{npu.ErrTokenTimeout, Class{Status: 504, Code: "token_timeout", Server: true}},
		{npu.ErrClientGone, Class{Status: StatusClientClosed, Code: "client_closed"}},
		{fmt.Errorf("%w: %w", npu.ErrClientGone, npu.ErrKeyRevoked), Class{Status: 401, Code: "key_revoked"}},
		{&npu.EngineError{Engine: "x", Cause: errors.New("boom")}, Class{Status: 500, Code: "engine_error", Server: true}},
		{&npu.EngineError{Engine: "x", Cause: fmt.Errorf("worker: %w", npu.ErrEngineCrashed)}, Class{Status: 503, Code: "engine_crashed", Server: true, Retryable: true}},
		{fmt.Errorf("worker: %w", npu.ErrEngineHung), Class{Status: 503, Code: "engine_hung", Server: true, Retryable: true}},
		// A crash or hang that lost the model keeps its class; a model
		// found gone before the job started has its own.
		{fmt.Errorf("worker: %w: %w", npu.ErrEngineCrashed, npu.ErrModelLost), Class{Status: 503, Code: "engine_crashed", Server: true, Retryable: true}},
		{fmt.Errorf("worker: %w: %w", npu.ErrEngineHung, npu.ErrModelLost), Class{Status: 503, Code: "engine_hung", Server: true, Retryable: true}},
		{fmt.Errorf("worker: %w: %w", npu.ErrEngineCrashedOnRequest, npu.ErrModelLost), Class{Status: 422, Code: "engine_crashed_on_request", Server: true}},
		{fmt.Errorf("model %q: %w", "m", npu.ErrModelLost), Class{Status: 503, Code: "model_lost", Server: true, Retryable: true}},
		{fmt.Errorf("worker: %w", npu.ErrEngineCrashedOnRequest), Class{Status: 422, Code: "engine_crashed_on_request", Server: true}},
		{fmt.Errorf("worker: %w", npu.ErrCrashThrottled), Class{Status: 429, Code: "crash_throttled", Retryable: true}},
		{fmt.Errorf("model %q: %w", "m", npu.ErrDeviceUnhealthy), Class{Status: 503, Code: "device_unhealthy", Server: true, Retryable: true}},
		{fmt.Errorf("upstream %q: %w", "u", npu.ErrUpstreamUnavailable), Class{Status: 503, Code: "upstream_unavailable", Server: true, Retryable: true}},
		{&npu.EngineError{Engine: "x", Cause: fmt.Errorf("callback: %w", npu.ErrPanic)}, Class{Status: 500, Code: "engine_panic", Server: true}},
		{errors.New("anything else"), Class{Status: http.StatusInternalServerError, Code: "internal_error", Server: true}},
	} {
		assert.Equal(t, tc.want, Of(tc.err), "%v", tc.err)
	}
}

// An unknown model's 404 says the same on every API: what is served (at
// most eight names, sorted) and how to answer to the name.
func TestModelNotFound(t *testing.T) {
	err := fmt.Errorf("model %q: %w", "gpt-5-codex", npu.ErrModelNotFound)
	many := []string{"j", "i", "h", "g", "f", "e", "d", "c", "b", "a"}
	for _, tc := range []struct {
		served []string
		how    string
		want   string
	}{
		{nil, "", `model "gpt-5-codex": model not found: it is not served here; ` + AliasHint},
		{[]string{"qwen3", "llama"}, "try pulling it first",
			`model "gpt-5-codex": model not found: it is not served here, try pulling it first (served: llama, qwen3); ` + AliasHint},
		{many, "", `model "gpt-5-codex": model not found: it is not served here (served: a, b, c, d, e, f, g, h and 2 more); ` + AliasHint},
	} {
		assert.Equal(t, tc.want, ModelNotFound(err, tc.served, tc.how))
	}
	assert.Equal(t, "j", many[0], "the caller's list is not sorted in place")
}

// Every class npu's table can give has its status here: a sentinel added
// to the table without one would be a silent 500.
func TestEveryClassHasAStatus(t *testing.T) {
	for _, c := range npu.Classes() {
		_, ok := statusOf[c.Code]
		assert.True(t, ok, "no HTTP status for npu's class %q", c.Code)
		if sentinel := npu.Sentinel(c.Code); sentinel != nil {
			assert.Equal(t, c, npu.Classify(sentinel), "the table classifies its own sentinel %q as listed", c.Code)
		}
	}
	assert.Len(t, statusOf, len(npu.Classes()), "and no status for a code npu does not give")
}
