//go:build cgo

package openvino

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/npud/npud/npu/openvino/ovtestlib"
)

// testLib is npud's GenAI test library (testdata/ovgenai), built by
// ovtestlib and loaded by TestMain through the product's own discovery.
var testLib *Library

func TestMain(m *testing.M) {
	dir, err := ovtestlib.Dir(ovtestlib.Current)
	if err == nil {
		testLib, err = OpenLibrary(LibraryOptions{Path: dir})
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			fmt.Fprintln(os.Stderr, "the GenAI test library:", err)
			os.Exit(1)
		}
		fmt.Println("skipping the OpenVINO binding's tests:", err)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// The test library's inspection hooks (ovtest.h), looked up in the loaded
// library like any other symbol.
func testHook(name string) int64 {
	n, ok := testLib.hook(name)
	if !ok {
		panic("the test library has no " + name)
	}
	return n
}

func testLiveObjects() int64         { return testHook("ovtest_live_objects") }
func testLastCallbacksForeign() bool { return testHook("ovtest_last_callbacks_foreign") != 0 }
func testLastCallsAfterStop() int    { return int(testHook("ovtest_last_calls_after_stop")) }
func testLastGenerated() int         { return int(testHook("ovtest_last_generated")) }
func testLastPrefilled() int         { return int(testHook("ovtest_last_prefilled")) }
func testLastWritten() int           { return int(testHook("ovtest_last_written")) }

// The NPU cost model's figures for the last generate and compile.
func testLastPrefillSeconds() float64 { return float64(testHook("ovtest_last_prefill_us")) / 1e6 }
func testLastRestored() int           { return int(testHook("ovtest_last_restored")) }
func testLastChunks() int             { return int(testHook("ovtest_last_chunks")) }
func testLastCompileSeconds() float64 { return float64(testHook("ovtest_last_compile_us")) / 1e6 }
func testLastCompileCached() bool     { return testHook("ovtest_last_compile_cached") != 0 }

// testGenerateCalls counts the generates the library ran.
func testGenerateCalls() int { return int(testHook("ovtest_generate_calls")) }

// testImagesEncoded counts the images the VLM pipelines encoded.
func testImagesEncoded() int { return int(testHook("ovtest_images_encoded")) }
