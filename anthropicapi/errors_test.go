package anthropicapi

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/npud/npud/npu"
)

// Each class of error gets Anthropic's status and type; npud's 503s are
// Anthropic's 529 overloaded_error, with Retry-After.
func TestToError(t *testing.T) {
	retry := func() time.Duration { return 3 * time.Second }
	for _, tc := range []struct {
		err    error
		status int
		typ    string
		retry  bool
	}{
		{fmt.Errorf("x: %w", npu.ErrQueueFull), StatusOverloaded, "overloaded_error", true},
		{fmt.Errorf("x: %w", npu.ErrShuttingDown), StatusOverloaded, "overloaded_error", true},
		{fmt.Errorf("x: %w", npu.ErrEngineCrashed), StatusOverloaded, "overloaded_error", true},
		{fmt.Errorf("x: %w", npu.ErrTooManyStreams), http.StatusTooManyRequests, "rate_limit_error", true},
		{fmt.Errorf("x: %w", npu.ErrContextLength), http.StatusBadRequest, "invalid_request_error", false},
		{fmt.Errorf("x: %w", npu.ErrModelNotFound), http.StatusNotFound, "not_found_error", false},
		{fmt.Errorf("x: %w", npu.ErrTokenTimeout), http.StatusGatewayTimeout, "timeout_error", false},
		{&npu.EngineError{Engine: "openvino", Cause: fmt.Errorf("boom")}, http.StatusInternalServerError, "api_error", false},
		{&npu.InvalidRequestError{Param: "images", Message: "no"}, http.StatusBadRequest, "invalid_request_error", false},
	} {
		e := toError(tc.err, retry, func() []string { return []string{"qwen3"} })
		assert.Equal(t, tc.status, e.Status, "%v", tc.err)
		assert.Equal(t, tc.typ, e.Type, "%v", tc.err)
		assert.Equal(t, tc.retry, e.RetryAfter > 0, "%v", tc.err)
	}
	assert.Contains(t, toError(npu.ErrModelNotFound, retry, func() []string { return []string{"qwen3"} }).Message,
		"(served: qwen3); to answer to this name, start npud with --alias NAME=MODEL")
}
