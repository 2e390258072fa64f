//go:build openvino && cgo

package openvino

/*
#include <stdint.h>
*/
import "C"

import (
	"runtime/cgo"

	"github.com/npud/npud/npu"
)

// npudStreamChunk is the streamer callback's Go side, called from the C
// trampoline on whatever thread GenAI streams from. It copies the text (the
// C string lives only for this call) and answers the bridge's status. A
// panic must not unwind through C: it cancels the generation instead.
//
//export npudStreamChunk
func npudStreamChunk(handle C.uintptr_t, text *C.char) (status C.int) {
	defer func() {
		if recover() != nil {
			status = C.int(npu.Cancel)
		}
	}()
	state := cgo.Handle(handle).Value().(*streamState)
	state.calls.Add(1)
	return C.int(state.sink(C.GoString(text)))
}
