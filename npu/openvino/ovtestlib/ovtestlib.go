// Package ovtestlib builds npud's OpenVINO GenAI test library
// (testdata/ovgenai) for tests, so that every test loads it through the
// same run-time discovery as the product (--openvino-lib).
package ovtestlib

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// EnvDir names a folder holding an already built test library, which
// Dir then uses as it is: make test-openvino-asan sets it to the
// AddressSanitizer build.
const EnvDir = "NPUD_OVTEST_LIB"

// Variant is a build of the test library.
type Variant string

const (
	// Current behaves as GenAI 2026.3.
	Current Variant = ""
	// WithoutGetString lacks ov_genai_decoded_results_get_string, as
	// releases before npud's minimum do.
	WithoutGetString Variant = "-DOVTEST_WITHOUT_GET_STRING"
	// WithoutWhisper lacks GenAI's Whisper pipeline (a GenAI built without
	// it): text models still load, speech models are refused.
	WithoutWhisper Variant = "-DOVTEST_WITHOUT_WHISPER"
)

// Source is the test library's source folder.
func Source() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "ovgenai")
}

// Dir returns a folder holding the test library's shared libraries, built
// with make and gcc into the user's cache folder under a name derived from
// the sources (built once, then reused; concurrent test binaries each
// build in a folder of their own and the first rename wins).
func Dir(v Variant) (string, error) {
	if dir := os.Getenv(EnvDir); dir != "" && v == Current {
		return dir, nil
	}
	src := Source()
	sum, err := sourceHash(src, v)
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "npud-ovtest", sum)
	if _, err := os.Stat(filepath.Join(dir, "libopenvino_genai_c.so")); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "build-")
	if err != nil {
		return "", err
	}
	// A build that hangs fails the tests that need it with an error, well
	// before the test binary's own timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "-C", src, "OUT="+tmp, "EXTRA_CFLAGS="+string(v))
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.RemoveAll(tmp)
		return "", fmt.Errorf("building the GenAI test library (needs make and gcc): %w\n%s", err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		_ = os.RemoveAll(tmp) // another test binary built it first
		if _, statErr := os.Stat(filepath.Join(dir, "libopenvino_genai_c.so")); statErr != nil {
			return "", errors.Join(err, statErr)
		}
	}
	return dir, nil
}

// sourceHash names a build by everything that goes into it: the C
// sources, the Makefile, the binding's headers and the variant.
func sourceHash(src string, v Variant) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "variant %s\n", v)
	include := filepath.Join(src, "..", "..", "npu", "openvino", "include")
	for _, root := range []string{src, include} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != root && strings.HasPrefix(d.Name(), "build") {
					return filepath.SkipDir
				}
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%s %d\n", strings.TrimPrefix(path, root), len(b))
			h.Write(b)
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// Require is Dir(v) for a test: it skips the test where the library
// cannot be built (no gcc or make), except in CI, where it fails it.
func Require(t testing.TB, v Variant) string {
	t.Helper()
	dir, err := Dir(v)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the GenAI test library: %v", err)
		}
		t.Skipf("the GenAI test library cannot be built here: %v", err)
	}
	return dir
}

// WriteModel makes a model folder with the files a GenAI pipeline reads
// (the IR and its weights, the tokenizer and detokenizer, a chat
// template), less the ones named in without.
func WriteModel(t testing.TB, models, name string, without ...string) {
	t.Helper()
	dir := filepath.Join(models, name)
	files := map[string]string{
		"openvino_model.xml": "<net/>", "openvino_model.bin": "w", "openvino_tokenizer.xml": "<net/>",
		"openvino_detokenizer.xml": "<net/>", "tokenizer_config.json": `{"chat_template": "{{ messages }}"}`,
	}
	for _, f := range without {
		delete(files, f)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, content := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// SplitTokenizers copies the test library's files in lib (links resolved)
// into a folder of their own, less openvino-tokenizers, which goes to a
// second folder: GenAI's C library outside a wheel or archive folder, as
// --openvino-lib DIR names it, with its tokenizers elsewhere.
func SplitTokenizers(t testing.TB, lib string) (genai, tokenizers string) {
	t.Helper()
	genai, tokenizers = t.TempDir(), t.TempDir()
	entries, err := os.ReadDir(lib)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(lib, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		to := genai
		if strings.HasPrefix(e.Name(), "libopenvino_tokenizers") {
			to = tokenizers
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return genai, tokenizers
}
