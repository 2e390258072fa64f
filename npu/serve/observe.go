package serve

import (
	"time"

	"github.com/npud/npud/npu"
)

// noObserver hears nothing: a pool or router without an Observer.
type noObserver struct{}

func (noObserver) ModelLoaded(string, string, time.Duration)  {}
func (noObserver) TokenGap(string, string, time.Duration)     {}
func (noObserver) Prefill(string, npu.CacheResult, int, int)  {}
func (noObserver) GenerationEnded(npu.GenerationReport)       {}
func (noObserver) Refused(string, error)                      {}
func (noObserver) TranscriptionEnded(npu.TranscriptionReport) {}
