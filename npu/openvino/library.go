//go:build cgo

package openvino

/*
#cgo CFLAGS: -I${SRCDIR}/include
#cgo linux LDFLAGS: -ldl
#include <stdlib.h>
#include "ovapi.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"unsafe"
)

// MinVersion is the oldest OpenVINO GenAI release whose C API has every
// function npud calls (2026.2 added the last of them,
// ov_genai_generation_config_set_min_p); the headers npud is checked
// against are 2026.3's, identical for those functions.
var MinVersion = Version{Year: 2026, Minor: 2}

// Version is an OpenVINO release: 2026.3 is {2026, 3}.
type Version struct{ Year, Minor int }

func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Year, v.Minor) }

// Less reports whether v is older than w.
func (v Version) Less(w Version) bool {
	return v.Year < w.Year || (v.Year == w.Year && v.Minor < w.Minor)
}

// parseVersion reads the release from OpenVINO's build number, such as
// "2026.3.0-19807-44526285f24-releases/2026/3".
func parseVersion(build string) (Version, bool) {
	fields := strings.SplitN(build, ".", 3)
	if len(fields) < 2 {
		return Version{}, false
	}
	year, err1 := strconv.Atoi(fields[0])
	minor, err2 := strconv.Atoi(strings.TrimRightFunc(fields[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return Version{}, false
	}
	return Version{year, minor}, true
}

// Library is a loaded OpenVINO GenAI C library. It stays loaded for the
// life of the process.
type Library struct {
	api       *C.npud_ov_api
	GenAIPath string // the GenAI C library's file, or its name for the system loader
	CorePath  string // OpenVINO's core C library, "" when the loader found it
	// Chain is what was loaded by path before the C libraries, in order
	// (TBB, libopenvino, libopenvino_genai): see dependencyChain.
	Chain []string
	// Tokenizers is the openvino-tokenizers library npud pointed GenAI at
	// (OPENVINO_TOKENIZERS_PATH_GENAI), "" when GenAI finds its own.
	Tokenizers string
	// TokenizersFile is the openvino-tokenizers library GenAI will load
	// (FindTokenizers); TokenizersErr why there is none, when there is
	// none: then every pipeline fails to start.
	TokenizersFile string
	TokenizersErr  error
	Build          string // OpenVINO's build number (ov_get_openvino_version)
	Version        Version
	Source         string // which discovery step found it
	// embed is how embedding and rerank models are compiled: set on a
	// copy only (compilingEmbeddings).
	embed embedOptions
}

// LibraryOptions says where to look for the library.
type LibraryOptions struct {
	// Path is --openvino-lib: the GenAI C library's file, or a folder
	// (an archive's root, its library folder, or any folder holding it).
	Path string
	// Getenv reads OpenVINO_DIR and INTEL_OPENVINO_DIR (nil: none set).
	Getenv func(string) string
	// Log gets each discovery step at debug level (nil: discard).
	Log *slog.Logger
}

// getenv is Getenv, or a lookup that finds nothing when it is nil.
func (opts LibraryOptions) getenv() func(string) string {
	if opts.Getenv == nil {
		return func(string) string { return "" }
	}
	return opts.Getenv
}

// Attempt is one place discovery looked.
type Attempt struct {
	Source string `json:"source"` // --openvino-lib, OpenVINO_DIR, INTEL_OPENVINO_DIR, archive, python wheel, system
	Where  string `json:"where"`  // the file or folder
	Found  string `json:"found,omitempty"`
	Err    string `json:"error,omitempty"` // why what was found could not be used
}

// LoadError says why no library could be used, and where discovery looked.
type LoadError struct {
	Attempts []Attempt
	// Unusable is set when a library was found but refused (too old, a
	// symbol missing): the first such refusal.
	Unusable error
	// notFound is what was looked for: ErrNotFound, or ErrCoreNotFound
	// for OpenCore.
	notFound error
}

// ErrNotFound is wrapped by a LoadError that found no library at all;
// ErrCoreNotFound by OpenCore's.
var (
	ErrNotFound     = errors.New("OpenVINO GenAI's C library was not found")
	ErrCoreNotFound = errors.New("OpenVINO's core C library was not found")
)

func (e *LoadError) what() error {
	if e.notFound != nil {
		return e.notFound
	}
	return ErrNotFound
}

func (e *LoadError) Error() string {
	if e.Unusable != nil {
		return e.Unusable.Error()
	}
	places := make([]string, 0, len(e.Attempts))
	for _, a := range e.Attempts {
		places = append(places, a.Source+" "+a.Where)
	}
	return fmt.Sprintf("%v (looked in: %s)", e.what(), strings.Join(places, "; "))
}

func (e *LoadError) Unwrap() error {
	if e.Unusable != nil {
		return e.Unusable
	}
	return e.what()
}

// ErrTooOld and ErrMissingSymbol classify an unusable library.
var (
	ErrTooOld        = errors.New("OpenVINO GenAI is too old")
	ErrMissingSymbol = errors.New("OpenVINO GenAI's C library lacks a function npud calls")
)

// libraryNames are the GenAI and core C libraries' file names on this OS.
func libraryNames() (genai, core string) {
	if runtime.GOOS == "windows" {
		return "openvino_genai_c.dll", "openvino_c.dll"
	}
	return "libopenvino_genai_c.so", "libopenvino_c.so"
}

// OpenLibrary finds and loads OpenVINO GenAI's C library: --openvino-lib,
// then OpenVINO_DIR and INTEL_OPENVINO_DIR (what the archive's setupvars
// sets), the archive's usual install folders, an openvino_genai Python
// wheel, then the system loader's path. The first library found that
// loads and is recent enough is used; an explicit --openvino-lib that
// cannot be used is an error, never a fallback.
func OpenLibrary(opts LibraryOptions) (*Library, error) {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	getenv := opts.getenv()
	lerr := &LoadError{}
	for _, c := range discoverySteps(opts.Path, getenv) {
		a := Attempt{Source: c.source, Where: c.where}
		genai, core := c.find()
		if genai == "" {
			log.Debug("openvino library: not here", "source", c.source, "where", c.where)
			lerr.Attempts = append(lerr.Attempts, a)
			if c.source == "--openvino-lib" {
				return nil, fmt.Errorf("--openvino-lib %s: no %s there: %w", c.where, firstName(), ErrNotFound)
			}
			continue
		}
		a.Found = genai
		lib, err := load(genai, core)
		if err != nil {
			a.Err = err.Error()
			lerr.Attempts = append(lerr.Attempts, a)
			log.Debug("openvino library: found but not usable", "source", c.source, "path", genai, "err", err)
			if c.source == "--openvino-lib" {
				return nil, err
			}
			if lerr.Unusable == nil {
				lerr.Unusable = err
			}
			continue
		}
		lib.Source = c.source
		log.Debug("openvino library: loaded", "source", c.source, "path", genai, "core", core, "chain", lib.Chain, "tokenizers", lib.Tokenizers, "version", lib.Build)
		return lib, nil
	}
	return nil, lerr
}

// FindLibrary runs the discovery of OpenLibrary without loading what it
// finds (the daemon with worker processes runs no OpenVINO code itself):
// the GenAI C library's path, or a LoadError wrapping ErrNotFound that
// lists where it looked. Only the system step asks the loader, which
// opens the library to answer.
func FindLibrary(opts LibraryOptions) (string, error) {
	getenv := opts.getenv()
	lerr := &LoadError{}
	for _, c := range discoverySteps(opts.Path, getenv) {
		if genai, _ := c.find(); genai != "" {
			return genai, nil
		}
		lerr.Attempts = append(lerr.Attempts, Attempt{Source: c.source, Where: c.where})
		if c.source == "--openvino-lib" {
			return "", fmt.Errorf("--openvino-lib %s: no %s there: %w", c.where, firstName(), ErrNotFound)
		}
	}
	return "", lerr
}

func firstName() string {
	g, _ := libraryNames()
	return g
}

// load opens the libraries and checks the version.
func load(genai, core string) (*Library, error) {
	chain, err := keepChain(dependencyChain(genai, core))
	if err != nil {
		return nil, err
	}
	tokenizersFile, tokenizers, tokenizersErr := pointAtTokenizers(genai, core)
	cgenai := C.CString(genai)
	defer C.free(unsafe.Pointer(cgenai))
	var ccore *C.char
	if core != "" {
		ccore = C.CString(core)
		defer C.free(unsafe.Pointer(ccore))
	}
	var buf [1024]C.char
	api := C.npud_ov_open(ccore, cgenai, &buf[0], C.size_t(len(buf)))
	if api == nil {
		msg := C.GoString(&buf[0])
		if name, ok := strings.CutPrefix(msg, "missing symbol "); ok {
			return nil, fmt.Errorf("%s: %w: %s (npud needs OpenVINO GenAI %s or newer)", genai, ErrMissingSymbol, name, MinVersion)
		}
		return nil, fmt.Errorf("loading %s: %s", genai, msg)
	}
	lib := &Library{api: api, GenAIPath: genai, CorePath: core, Chain: chain, Tokenizers: tokenizers,
		TokenizersFile: tokenizersFile, TokenizersErr: tokenizersErr}
	if err := lib.readVersion(genai); err != nil {
		return nil, err
	}
	if version := lib.Version; version.Less(MinVersion) {
		return nil, fmt.Errorf("%s is OpenVINO GenAI %s (%s): %w: npud needs %s or newer", genai, version, lib.Build, ErrTooOld, MinVersion)
	}
	return lib, nil
}

// readVersion asks the core for its build number (ov_get_openvino_version).
func (l *Library) readVersion(path string) error {
	var v C.ov_version_t
	if err := check(l.api, "ov_get_openvino_version", "", C.npud_ov_get_openvino_version(l.api, &v)); err != nil {
		return err
	}
	l.Build = C.GoString(v.buildNumber)
	C.npud_ov_version_free(l.api, &v)
	version, ok := parseVersion(l.Build)
	if !ok {
		return fmt.Errorf("%s: cannot read OpenVINO's version from %q", path, l.Build)
	}
	l.Version = version
	return nil
}

// OpenCore finds and loads OpenVINO's core C library alone, in the same
// places as OpenLibrary (an openvino Python wheel's openvino/libs too), for
// npud doctor: the runtime's version and devices where GenAI's C library
// is missing, as after "pip install openvino-genai" (the wheels hold GenAI's
// C++ library only). The Library it returns has no GenAI half: GenAIPath
// is "" and it serves no pipeline.
func OpenCore(opts LibraryOptions) (*Library, error) {
	getenv := opts.getenv()
	lerr := &LoadError{}
	for _, c := range discoverySteps(opts.Path, getenv) {
		a := Attempt{Source: c.source, Where: c.where}
		core := ""
		if c.findCore != nil {
			core = c.findCore()
		}
		if core == "" {
			lerr.Attempts = append(lerr.Attempts, a)
			continue
		}
		a.Found = core
		lib, err := loadCore(core)
		if err != nil {
			a.Err = err.Error()
			lerr.Attempts = append(lerr.Attempts, a)
			if lerr.Unusable == nil {
				lerr.Unusable = err
			}
			continue
		}
		lib.Source = c.source
		return lib, nil
	}
	lerr.notFound = ErrCoreNotFound
	return nil, lerr
}

func loadCore(core string) (*Library, error) {
	chain, err := keepChain(dependencyChain("", core))
	if err != nil {
		return nil, err
	}
	ccore := C.CString(core)
	defer C.free(unsafe.Pointer(ccore))
	var buf [1024]C.char
	api := C.npud_ov_open_core(ccore, &buf[0], C.size_t(len(buf)))
	if api == nil {
		return nil, fmt.Errorf("loading %s: %s", core, C.GoString(&buf[0]))
	}
	lib := &Library{api: api, CorePath: core, Chain: chain}
	if err := lib.readVersion(core); err != nil {
		return nil, err
	}
	return lib, nil
}

// dependencyChain lists what the C libraries need, in the order to load
// it by path: TBB, then libopenvino (the core C library needs both), then
// libopenvino_genai (GenAI's C library needs it). A library's dependencies
// are found by soname, and a library already loaded satisfies its soname
// whatever its folder, so loading them first makes a folder work that no
// search path names: the archive's libraries carry no RUNPATH (its
// setupvars.sh sets LD_LIBRARY_PATH instead), and GenAI's libraries in
// the PyPI wheels carry none either (libopenvino_genai.so.2641 needs
// libopenvino.so.2641 from another wheel's folder; readelf -d). Only files
// that exist are listed; Windows' loader searches the DLL's own folder.
func dependencyChain(genai, core string) []string {
	if runtime.GOOS == "windows" {
		return nil
	}
	var coreDirs, genaiDirs []string
	if core != "" {
		dir := filepath.Dir(core)
		coreDirs = append(coreDirs, dir)
		// The archive's runtime/lib/intel64 with TBB in runtime/3rdparty/tbb/lib.
		coreDirs = append(coreDirs, filepath.Join(dir, "..", "..", "3rdparty", "tbb", "lib"))
	}
	if genai != "" {
		genaiDirs = append(genaiDirs, filepath.Dir(genai))
		coreDirs = append(coreDirs, filepath.Dir(genai))
	}
	var chain []string
	for _, step := range []struct {
		name string
		dirs []string
	}{{"libtbb.so", coreDirs}, {"libopenvino.so", coreDirs}, {"libopenvino_genai.so", genaiDirs}} {
		if p := findLibrary(step.dirs, step.name); p != "" && !slices.Contains(chain, p) {
			chain = append(chain, p)
		}
	}
	return chain
}

// EnvTokenizersPath is where GenAI looks for the openvino-tokenizers
// library first; without it, beside its own library
// (tokenizers_relative_to_genai, openvino.genai
// src/cpp/src/tokenizer/tokenizers_path.cpp).
const EnvTokenizersPath = "OPENVINO_TOKENIZERS_PATH_GENAI"

// keepChain loads each library of the chain by path, in order, for the
// life of the process.
func keepChain(chain []string) ([]string, error) {
	for _, p := range chain {
		cp := C.CString(p)
		var buf [1024]C.char
		ok := C.npud_lib_keep(cp, &buf[0], C.size_t(len(buf)))
		C.free(unsafe.Pointer(cp))
		if ok == 0 {
			return nil, fmt.Errorf("loading %s (needed by OpenVINO's C libraries): %s", p, C.GoString(&buf[0]))
		}
	}
	return chain, nil
}

// hook calls a function of the library taking nothing and returning an
// integer, if it has one: the test library's inspection hooks.
func (l *Library) hook(name string) (int64, bool) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	fn := C.npud_ov_symbol(l.api, cname)
	if fn == nil {
		return 0, false
	}
	return int64(C.npud_call_int64(fn)), true
}

// candidate is one discovery step: a folder layout to search, or a name
// for the system loader.
type candidate struct {
	source, where string
	find          func() (genai, core string)
	// findCore finds OpenVINO's core C library alone (OpenCore); nil: this
	// step has no place of its own for it.
	findCore func() string
}

func discoverySteps(path string, getenv func(string) string) []candidate {
	var out []candidate
	if path != "" {
		out = append(out, candidate{"--openvino-lib", path, func() (string, string) {
			if st, err := os.Stat(path); err == nil && !st.IsDir() {
				_, coreName := libraryNames()
				return path, findLibrary(coreFolders(filepath.Dir(path)), coreName)
			}
			return inRoot(path)
		}, func() string {
			if st, err := os.Stat(path); err == nil && !st.IsDir() {
				path = filepath.Dir(path)
			}
			return coreInRoot(path)
		}})
	}
	for _, env := range []string{"OpenVINO_DIR", "INTEL_OPENVINO_DIR"} {
		if dir := getenv(env); dir != "" {
			out = append(out, candidate{env, dir, func() (string, string) { return inRoot(dir) }, func() string { return coreInRoot(dir) }})
		}
	}
	nothing := func() (string, string) { return "", "" }
	archives := archiveFolders()
	if len(archives) == 0 {
		out = append(out, candidate{"archive", archivePattern(), nothing, nil}) // said, so people know it was looked at
	}
	for _, dir := range archives {
		out = append(out, candidate{"archive", dir, func() (string, string) { return inRoot(dir) }, func() string { return coreInRoot(dir) }})
	}
	sites := pythonSitePackages(getenv)
	if len(sites) == 0 {
		out = append(out, candidate{"python wheel", "no openvino or openvino_genai package in the Python environments", nothing, nil})
	}
	for _, site := range sites {
		genaiDir := filepath.Join(site, "openvino_genai")
		// The core library is the openvino wheel's, beside GenAI's.
		coreDir := filepath.Join(site, "openvino", "libs")
		genaiName, coreName := libraryNames()
		out = append(out, candidate{"python wheel", genaiDir, func() (string, string) {
			genai := findLibrary([]string{genaiDir}, genaiName)
			if genai == "" {
				return "", ""
			}
			return genai, findLibrary([]string{coreDir}, coreName)
		}, func() string { return findLibrary([]string{coreDir}, coreName) }})
	}
	genaiName, coreName := libraryNames()
	out = append(out, candidate{source: "system", where: "the loader's search path", find: func() (string, string) {
		// A name without a folder goes to the system loader, which finds
		// what ldconfig and LD_LIBRARY_PATH (PATH on Windows) know.
		cname := C.CString(genaiName)
		defer C.free(unsafe.Pointer(cname))
		if C.npud_lib_probe(cname) != 0 {
			return genaiName, ""
		}
		dirs := systemFolders()
		if genai := findLibrary(dirs, genaiName); genai != "" {
			return genai, findLibrary(coreFolders(filepath.Dir(genai)), coreName)
		}
		return "", ""
	}, findCore: func() string { return findLibrary(systemFolders(), coreName) }})
	return out
}

// coreInRoot searches an install root for the core C library alone.
func coreInRoot(root string) string {
	_, coreName := libraryNames()
	return findLibrary(rootFolders(root), coreName)
}

// inRoot searches an install root: the folder itself, the archive's
// library folder under it, and, for OpenVINO_DIR (the archive's
// runtime/cmake), the library folder beside it.
func inRoot(root string) (genai, core string) {
	genaiName, coreName := libraryNames()
	genai = findLibrary(rootFolders(root), genaiName)
	if genai == "" {
		return "", ""
	}
	return genai, findLibrary(coreFolders(filepath.Dir(genai)), coreName)
}

// coreFolders are where the core C library sits beside GenAI's in dir:
// the same folder (the archives), or, for a GenAI C library put into an
// openvino_genai wheel's folder, the openvino wheel's libs beside it. The
// daemon hands its worker processes the GenAI library's path alone, so a
// wheel layout must be recognised from that path too.
func coreFolders(dir string) []string {
	return []string{dir, filepath.Join(filepath.Dir(dir), "openvino", "libs")}
}

// rootFolders are the library folders of an install root.
func rootFolders(root string) []string {
	dirs := []string{root}
	for _, sub := range []string{"runtime/lib/intel64", "runtime/lib/intel64/Release", "runtime/bin/intel64/Release", "lib/intel64", "lib"} {
		dirs = append(dirs, filepath.Join(root, filepath.FromSlash(sub)))
	}
	if filepath.Base(root) == "cmake" {
		parent := filepath.Dir(root) // runtime
		dirs = append(dirs, filepath.Join(parent, "lib", "intel64"), filepath.Join(parent, "bin", "intel64", "Release"))
	}
	return dirs
}

// findLibrary returns the first folder's library called name: the
// unversioned file, else the versioned ones the releases ship
// (libopenvino_genai_c.so.2630, .so.2026.3.0.0), the newest first.
func findLibrary(dirs []string, name string) string {
	for _, dir := range dirs {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
		if runtime.GOOS == "windows" {
			continue
		}
		versioned, _ := filepath.Glob(filepath.Join(dir, name+".*"))
		slices.SortFunc(versioned, func(a, b string) int { return strings.Compare(b, a) })
		for _, v := range versioned {
			if st, err := os.Stat(v); err == nil && !st.IsDir() {
				return v
			}
		}
	}
	return ""
}

// archiveFolders are where the archive is usually unpacked, newest first.
func archiveFolders() []string {
	dirs, _ := filepath.Glob(archivePattern())
	slices.SortFunc(dirs, func(a, b string) int { return strings.Compare(b, a) })
	return dirs
}

func archivePattern() string {
	if runtime.GOOS == "windows" {
		return `C:\Program Files (x86)\Intel\openvino*`
	}
	return "/opt/intel/openvino*"
}

// pythonSitePackages are the site-packages folders of the Python
// environments on this machine that hold an openvino_genai or an openvino
// package: the active virtual environment, the user's and the system's.
func pythonSitePackages(getenv func(string) string) []string {
	var bases []string
	if venv := getenv("VIRTUAL_ENV"); venv != "" {
		bases = append(bases, filepath.Join(venv, "lib", "python3*", "site-packages"), filepath.Join(venv, "Lib", "site-packages"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		bases = append(bases, filepath.Join(home, ".local", "lib", "python3*", "site-packages"))
	}
	bases = append(bases, "/usr/local/lib/python3*/dist-packages", "/usr/lib/python3/dist-packages", "/usr/local/lib/python3*/site-packages")
	var out []string
	for _, b := range bases {
		sites, _ := filepath.Glob(b)
		for _, site := range sites {
			for _, pkg := range []string{"openvino_genai", "openvino"} {
				if st, err := os.Stat(filepath.Join(site, pkg)); err == nil && st.IsDir() {
					out = append(out, site)
					break
				}
			}
		}
	}
	return out
}

// systemFolders are the library folders of Linux distributions, for
// versioned files that no unversioned link names.
func systemFolders() []string {
	if runtime.GOOS == "windows" {
		return nil
	}
	return []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/lib", "/usr/lib"}
}
