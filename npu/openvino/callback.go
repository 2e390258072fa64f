//go:build cgo

package openvino

/*
#include <stdint.h>
*/
import "C"

import (
	"fmt"
	"runtime/cgo"

	"github.com/npud/npud/npu"
)

// npudStreamChunk is the streamer callback's Go side, called from the C
// trampoline on whatever thread GenAI streams from. It copies the text (the
// C string lives only for this call) and answers the bridge's status. A
// panic must not unwind through C: it cancels the generation and is
// recorded, so the generation ends as an engine error.
//
//export npudStreamChunk
func npudStreamChunk(handle C.uintptr_t, text *C.char) (status C.int) {
	state := cgo.Handle(handle).Value().(*streamState)
	defer func() {
		if v := recover(); v != nil {
			state.panicked.CompareAndSwap(nil, fmt.Sprint(v))
			status = C.int(npu.Cancel)
		}
	}()
	n := state.calls.Add(1)
	chunk := C.GoString(text)
	if state.stoppedAt.Load() == 0 {
		state.sentBytes.Add(int64(len(chunk)))
	}
	st := state.sink(chunk)
	if st != npu.Running {
		state.stoppedAt.CompareAndSwap(0, n)
	}
	return C.int(st)
}
