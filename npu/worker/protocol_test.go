package worker

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
)

// sentinelsOf lists the exported sentinel errors (Err…) npu/errors.go
// declares, read from its source: a sentinel added there without a name
// for the wire fails the round trip below.
func sentinelsOf(t *testing.T) map[string]error {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../errors.go", nil, 0)
	require.NoError(t, err)
	byName := map[string]error{
		"ErrModelNotFound": npu.ErrModelNotFound, "ErrQueueFull": npu.ErrQueueFull, "ErrQueueTimeout": npu.ErrQueueTimeout,
		"ErrTokenTimeout": npu.ErrTokenTimeout, "ErrSlowConsumer": npu.ErrSlowConsumer, "ErrClientGone": npu.ErrClientGone, "ErrKeyRevoked": npu.ErrKeyRevoked,
		"ErrShuttingDown": npu.ErrShuttingDown, "ErrContextLength": npu.ErrContextLength, "ErrNotSupported": npu.ErrNotSupported,
		"ErrTooManyStreams": npu.ErrTooManyStreams, "ErrRateLimited": npu.ErrRateLimited, "ErrPanic": npu.ErrPanic, "ErrEngineCrashed": npu.ErrEngineCrashed,
		"ErrEngineHung": npu.ErrEngineHung, "ErrDeviceUnhealthy": npu.ErrDeviceUnhealthy,
		"ErrUpstreamUnavailable": npu.ErrUpstreamUnavailable, "ErrInvalidRequest": npu.ErrInvalidRequest,
		"ErrEngineCrashedOnRequest": npu.ErrEngineCrashedOnRequest, "ErrCrashThrottled": npu.ErrCrashThrottled,
		"ErrResumeExpired": npu.ErrResumeExpired, "ErrStreamAbandoned": npu.ErrStreamAbandoned, "ErrStreamCancelled": npu.ErrStreamCancelled,
		"ErrModelLost": npu.ErrModelLost, "ErrPromptNotCounted": npu.ErrPromptNotCounted,
		"ErrStructuredOutput": npu.ErrStructuredOutput,
	}
	out := map[string]error{}
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, spec := range g.Specs {
			for _, name := range spec.(*ast.ValueSpec).Names {
				if strings.HasPrefix(name.Name, "Err") {
					require.Contains(t, byName, name.Name, "a new sentinel: add it to this test and to npu's table")
					out[name.Name] = byName[name.Name]
				}
			}
		}
	}
	return out
}

// Issue 28 defect 2: every sentinel crosses the process boundary and comes
// back as the same class, alone, wrapped, and inside an EngineError (an
// engine's failure stays an engine failure for the APIs and the metrics).
func TestWireErrorsKeepTheirClass(t *testing.T) {
	sentinels := sentinelsOf(t)
	require.Len(t, sentinels, 26)
	for name, sentinel := range sentinels {
		t.Run(name, func(t *testing.T) {
			for _, sent := range []error{
				sentinel,
				fmt.Errorf("generating: %w", sentinel),
				&npu.EngineError{Engine: "openvino", Cause: fmt.Errorf("generate: %w", sentinel)},
			} {
				got := toWire(sent).errorOf()
				assert.ErrorIs(t, got, sentinel, "%v", sent)
				assert.Equal(t, sent.Error(), got.Error())
				var want, have *npu.EngineError
				if errors.As(sent, &want) {
					require.ErrorAs(t, got, &have, "an engine error stays one")
					assert.Equal(t, want.Engine, have.Engine)
				} else {
					assert.False(t, errors.As(got, &have), "and nothing else becomes one")
				}
				for other, s := range sentinels {
					if other != name && !errors.Is(sent, s) {
						assert.NotErrorIs(t, got, s, "no other class")
					}
				}
			}
		})
	}
	invalid := &npu.InvalidRequestError{Param: "top_p", Message: "top_p must be at most 1"}
	var got *npu.InvalidRequestError
	require.ErrorAs(t, toWire(invalid).errorOf(), &got)
	assert.Equal(t, *invalid, *got)
	plain := errors.New("something else")
	assert.Equal(t, plain.Error(), toWire(plain).errorOf().Error())
	assert.Nil(t, toWire(nil).errorOf())
}
