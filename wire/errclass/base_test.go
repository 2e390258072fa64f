package errclass

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/npud/npud/npu"
)

func TestBaseWritesTheStatusAndRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name  string
		e     Base
		retry string
	}{
		{"no retry", Base{Status: http.StatusBadRequest}, ""},
		{"rounded up to whole seconds", Base{Status: http.StatusServiceUnavailable, RetryAfter: 1500 * time.Millisecond}, "2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			tc.e.WriteHeader(w, "application/json")
			assert.Equal(t, tc.e.Status, w.Code)
			assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
			assert.Equal(t, tc.retry, w.Header().Get("Retry-After"))
		})
	}
	e := &Base{Message: "m", Cause: npu.ErrQueueFull}
	assert.EqualError(t, e, "m")
	assert.True(t, errors.Is(e, npu.ErrQueueFull), "the cause is reachable")
}

func TestRetryDelay(t *testing.T) {
	estimate := func() time.Duration { return 200 * time.Millisecond }
	for _, tc := range []struct {
		name string
		err  error
		want time.Duration
	}{
		{"not retryable", npu.ErrModelNotFound, 0},
		{"the router's estimate", npu.ErrQueueFull, 200 * time.Millisecond},
		{"at least a second after a 429", npu.ErrTooManyStreams, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Of(tc.err).RetryDelay(estimate))
		})
	}
	assert.Zero(t, Of(npu.ErrQueueFull).RetryDelay(nil), "no estimate: no Retry-After")
}
