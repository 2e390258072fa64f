package npu

import (
	"fmt"
	"time"
)

// CompileState is what a model's load will do on a device that compiles
// models (the NPU compiles for minutes the first time).
type CompileState int

const (
	// CompileUnknown: the engine compiles nothing, or no cache is kept
	// that could say; the load is just a load.
	CompileUnknown CompileState = iota
	// CompileFirst: no compiled blob of the model is cached, so the load
	// compiles it from scratch (minutes on an NPU).
	CompileFirst
	// CompileCached: the compiled blob is cached; the load imports it.
	CompileCached
)

// CompileCache knows which models have a compiled blob in the engine's
// cache folder (OpenVINO's CACHE_DIR): see npu/compilecache.
type CompileCache interface {
	// State says how loading model will go.
	State(model string) CompileState
	// Track is called before model's load; the function it returns is
	// called after it with the load's outcome.
	Track(model string) func(err error)
}

// LoadStatus describes a model load in progress, for the clients that
// wait on it (stream heartbeats, /api/ps, the console, sd_notify).
type LoadStatus struct {
	Model   string
	Compile CompileState
	// Device is the device named in the configuration ("NPU"), or "" for
	// AUTO, which picks one during the load.
	Device string
	Since  time.Time
}

// Text is the status in words, for people: `compiling for NPU (first
// time)`, `loading the compiled model`, or `loading`.
func (l LoadStatus) Text() string {
	switch l.Compile {
	case CompileFirst:
		if l.Device == "" {
			return "compiling (first time)"
		}
		return fmt.Sprintf("compiling for %s (first time)", l.Device)
	case CompileCached:
		return "loading the compiled model"
	}
	return "loading"
}

// Progress is Text with the model and the time spent so far, on one line:
// `loading model "qwen": compiling for NPU (first time)… 42 s`.
func (l LoadStatus) Progress(now time.Time) string {
	// %q keeps it one line, whatever the name holds.
	return fmt.Sprintf("loading model %q: %s… %d s", l.Model, l.Text(), int(now.Sub(l.Since)/time.Second))
}
