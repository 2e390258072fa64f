//go:build openvino && cgo && ovtest

package openvino

/*
#include "ovtest.h"
*/
import "C"

// Hooks of npud's GenAI test library (testdata/ovgenai), for the binding's
// tests; built only with the ovtest tag, against that library.

func testLiveObjects() int64         { return int64(C.ovtest_live_objects()) }
func testLastCallbacksForeign() bool { return C.ovtest_last_callbacks_foreign() != 0 }
func testLastCallsAfterStop() int    { return int(C.ovtest_last_calls_after_stop()) }
func testLastGenerated() int         { return int(C.ovtest_last_generated()) }
func testLastPrefilled() int         { return int(C.ovtest_last_prefilled()) }
func testLastWritten() int           { return int(C.ovtest_last_written()) }
