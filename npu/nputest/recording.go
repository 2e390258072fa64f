// Package nputest holds test helpers for engines.
package nputest

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/npud/npud/npu"
)

// RecordingEngine wraps an engine and records every answer its sink gave,
// so tests can see when the engine was told to stop or cancel.
type RecordingEngine struct {
	npu.Engine
	mu       sync.Mutex
	statuses []npu.Status
}

// Generate implements npu.Engine.
func (e *RecordingEngine) Generate(ctx context.Context, req *npu.Request, sink npu.Sink) (npu.Result, error) {
	return e.Engine.Generate(ctx, req, func(text string) npu.Status {
		st := sink(text)
		e.mu.Lock()
		e.statuses = append(e.statuses, st)
		e.mu.Unlock()
		return st
	})
}

// Statuses returns the answers so far, oldest first.
func (e *RecordingEngine) Statuses() []npu.Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]npu.Status(nil), e.statuses...)
}

// CountingEngine wraps an engine and counts the generations it was given.
type CountingEngine struct {
	npu.Engine
	n atomic.Int64
}

// Generate implements npu.Engine.
func (e *CountingEngine) Generate(ctx context.Context, req *npu.Request, sink npu.Sink) (npu.Result, error) {
	e.n.Add(1)
	return e.Engine.Generate(ctx, req, sink)
}

// Generations is how many generations the engine was given.
func (e *CountingEngine) Generations() int64 { return e.n.Load() }
