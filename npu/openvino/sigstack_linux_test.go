//go:build cgo && linux

package openvino

import (
	"context"
	"runtime"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// signalStack is the kernel's stack_t on linux/amd64 and arm64.
type signalStack struct {
	sp    uintptr
	flags int32
	_     int32
	size  uintptr
}

// threadSignalStack is this thread's alternate signal stack
// (sigaltstack(2)): the one the Go runtime gave it.
func threadSignalStack(t testing.TB) signalStack {
	t.Helper()
	var st signalStack
	_, _, errno := syscall.RawSyscall(syscall.SYS_SIGALTSTACK, 0, uintptr(unsafe.Pointer(&st)), 0)
	require.Zero(t, errno)
	return st
}

// OpenVINO's CPU plugin replaces the signal stack of the thread that
// constructs it (Plugin::Plugin, src/plugins/intel_cpu/src/plugin.cpp) and
// unmaps it when its core is freed, from whatever thread: on a Go thread
// the runtime's signal handler then runs on unmapped memory, and the
// process died in the Go runtime (runtime.futexwakeup, a corrupt M) within
// a few runs once a tokenizer had counted. Every call npud makes that
// constructs or destroys a CPU plugin gives the thread its own stack back.
func TestOfficialCPUPluginLeavesTheSignalStack(t *testing.T) {
	_, lib := realTokenizerCore(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	own := threadSignalStack(t)
	require.NotZero(t, own.sp, "the Go runtime gave this thread a signal stack")

	tok, err := lib.OpenTokenizer(context.Background(), tinyModel, TokenizerOptions{})
	require.NoError(t, err)
	assert.Equal(t, own, threadSignalStack(t), "compiling the tokenizer (a new core's CPU plugin)")
	_, err = tok.Count(t.Context(), "Say hello")
	require.NoError(t, err)
	require.NoError(t, tok.Close())
	assert.Equal(t, own, threadSignalStack(t), "freeing it")

	_, err = lib.Devices()
	require.NoError(t, err)
	assert.Equal(t, own, threadSignalStack(t), "listing the devices (each core's plugins)")
	_, _, _, _ = lib.askProperty("CPU", "FULL_DEVICE_NAME")
	assert.Equal(t, own, threadSignalStack(t), "asking the CPU for a property")
}
