//go:build cgo

package openvino

/*
#include <stdlib.h>
#include "ovapi.h"

static const char* npud_tokenizers_last_err(void* fn) { return ((const char* (*)(void))fn)(); }
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"unsafe"
)

// ErrTokenizersNotFound is wrapped when no openvino-tokenizers library is
// where GenAI looks or where discovery looks for one: GenAI then fails
// every pipeline (its tokenizer cannot start).
var ErrTokenizersNotFound = errors.New("the openvino-tokenizers library was not found")

// tokenizersName is openvino-tokenizers' library file, as GenAI names it
// (with_openvino_tokenizers, src/cpp/src/tokenizer/tokenizers_path.cpp).
func tokenizersName() string {
	if runtime.GOOS == "windows" {
		return "openvino_tokenizers.dll"
	}
	return "libopenvino_tokenizers.so"
}

// FindTokenizers finds the openvino-tokenizers library GenAI's tokenizer
// will load for the GenAI C library genai. GenAI takes EnvTokenizersPath
// when it is set, else the library beside its own, realpath resolved
// (tokenizers_relative_to_genai, tokenizers_path.cpp; core_with_extension,
// src/cpp/src/tokenizer/tokenizer_impl.cpp). When neither holds one,
// discovery looks where it looks for the core: the openvino-tokenizers
// wheel beside an openvino_genai wheel, the core's folder, the loader's
// path (LD_LIBRARY_PATH, PATH on Windows), the Python environments'
// wheels, OpenVINO_DIR and INTEL_OPENVINO_DIR, the archives and the
// system's folders. point is true when the library is not where GenAI
// looks by itself, so that GenAI must be pointed at it (EnvTokenizersPath).
func FindTokenizers(genai, core string, getenv func(string) string) (path string, point bool, err error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if set := getenv(EnvTokenizersPath); set != "" {
		return set, false, nil
	}
	name := tokenizersName()
	dir := filepath.Dir(genai)
	if !filepath.IsAbs(genai) {
		dir = "" // a name for the system loader: its folder is the loader's to know
	} else if p := findLibrary([]string{dir}, name); p != "" {
		return p, false, nil
	}
	var looked []string
	try := func(dirs ...string) string {
		looked = append(looked, dirs...)
		return findLibrary(dirs, name)
	}
	// An openvino_genai wheel's folder: the tokenizers wheel beside it.
	if dir != "" && filepath.Base(dir) == "openvino_genai" {
		if p := try(filepath.Join(filepath.Dir(dir), "openvino_tokenizers", "lib")); p != "" {
			return p, true, nil
		}
	}
	if real, err := filepath.EvalSymlinks(genai); dir != "" && err == nil && filepath.Dir(real) != dir {
		if p := findLibrary([]string{filepath.Dir(real)}, name); p != "" {
			return p, false, nil
		}
	}
	if core != "" {
		if p := try(filepath.Dir(core)); p != "" {
			return p, true, nil
		}
	}
	loaderPath := "LD_LIBRARY_PATH"
	if runtime.GOOS == "windows" {
		loaderPath = "PATH"
	}
	if p := try(filepath.SplitList(getenv(loaderPath))...); p != "" {
		return p, true, nil
	}
	if dir == "" {
		// Found by the loader: the tokenizers are where it found GenAI,
		// on its path or in the system's folders, not in another install.
		if p := try(systemFolders()...); p != "" {
			return p, true, nil
		}
		return "", false, fmt.Errorf("%w: not on the loader's path nor in %s (set %s to it)",
			ErrTokenizersNotFound, strings.Join(systemFolders(), ", "), EnvTokenizersPath)
	}
	for _, site := range pythonSitePackages(getenv) {
		if p := try(filepath.Join(site, "openvino_tokenizers", "lib")); p != "" {
			return p, true, nil
		}
	}
	var roots []string
	for _, env := range []string{"OpenVINO_DIR", "INTEL_OPENVINO_DIR"} {
		if root := getenv(env); root != "" {
			roots = append(roots, root)
		}
	}
	for _, root := range append(roots, archiveFolders()...) {
		if p := try(rootFolders(root)...); p != "" {
			return p, true, nil
		}
	}
	if p := try(systemFolders()...); p != "" {
		return p, true, nil
	}
	return "", false, fmt.Errorf("%w: not beside %s, nor in %s; GenAI starts no pipeline without it "+
		"(install the openvino-tokenizers of the same release beside GenAI's library, or set %s to it)",
		ErrTokenizersNotFound, dir, strings.Join(dedupe(looked), ", "), EnvTokenizersPath)
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	out := in[:0:0]
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// pointAtTokenizers points GenAI at the tokenizers library discovery found
// for genai when GenAI would not find it by itself (EnvTokenizersPath in
// this process's environment, which GenAI reads at each tokenizer's
// start), and returns what GenAI will load: the file, the path npud set
// ("" when none), and why there is none.
func pointAtTokenizers(genai, core string) (file, set string, err error) {
	file, point, err := FindTokenizers(genai, core, os.Getenv)
	if err != nil || !point {
		return file, "", err
	}
	if err := os.Setenv(EnvTokenizersPath, file); err != nil {
		return file, "", err
	}
	return file, file, nil
}

// LoadTokenizers loads the openvino-tokenizers library GenAI will use into
// a core of its own, as an extension (ov_core_add_extension), as GenAI's
// tokenizer does before it reads a tokenizer (core_with_extension,
// tokenizer_impl.cpp): what npud doctor checks before it says a model can
// start. It returns the file loaded.
func (l *Library) LoadTokenizers() (string, error) {
	if l.TokenizersErr != nil {
		return "", l.TokenizersErr
	}
	api := l.api
	var core *C.ov_core_t
	if err := check(api, "ov_core_create", "", C.npud_ov_core_create(api, &core)); err != nil {
		return "", err
	}
	defer C.npud_ov_core_free(api, core)
	cpath := C.CString(l.TokenizersFile)
	defer C.free(unsafe.Pointer(cpath))
	if err := check(api, "ov_core_add_extension", l.TokenizersFile, C.npud_ov_core_add_extension(api, core, cpath)); err != nil {
		cname := C.CString("ov_get_last_err_msg")
		defer C.free(unsafe.Pointer(cname))
		if fn := C.npud_ov_symbol(api, cname); fn != nil {
			if msg := C.npud_tokenizers_last_err(fn); msg != nil {
				return "", fmt.Errorf("%w: %s", err, strings.TrimSpace(C.GoString(msg)))
			}
		}
		return "", err
	}
	return l.TokenizersFile, nil
}
