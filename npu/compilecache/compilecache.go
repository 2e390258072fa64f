// Package compilecache tells whether loading a model will compile it from
// scratch or import a compiled blob from OpenVINO's cache folder
// (CACHE_DIR), so clients waiting on a load can be told "compiling for NPU
// (first time)" — minutes on a real NPU — or "loading the compiled model".
//
// OpenVINO names each cached blob after a hash of the model and its
// compile properties (`<hash>.blob`, FileStorageCacheManager in
// openvino src/inference/src/cache_manager.hpp), which npud cannot compute.
// So the index learns it: the blob files that appear in the folder while a
// model compiles are recorded for it, with a fingerprint of what decides
// the hash (the model's files, the device and properties); a later load
// finds its blobs still there, or compiles again. Pure Go, no engine.
package compilecache

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/npud/npud/npu"
)

// IndexFile is the index's file in the cache folder.
const IndexFile = "npud-compiled.json"

// maxIndexBytes bounds what is read of the index: a few hundred bytes per
// model.
const maxIndexBytes = 1 << 20

// maxBlobsPerModel bounds what one load can record (NPUW may cache a few
// blobs per model; a folder shared with another program may change a lot).
const maxBlobsPerModel = 64

// Index remembers which blobs in the cache folder belong to which model.
type Index struct {
	dir         string
	fingerprint func(model string) string
	log         *slog.Logger

	mu sync.Mutex // one read-modify-write of the index file at a time
}

var _ npu.CompileCache = (*Index)(nil)

// New returns the index of dir. fingerprint(model) describes what OpenVINO
// hashes into a blob's name (the model's files, device, properties): a
// change means the cached blob no longer serves the model.
func New(dir string, fingerprint func(model string) string, log *slog.Logger) *Index {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Index{dir: dir, fingerprint: fingerprint, log: log}
}

type entry struct {
	Fingerprint string   `json:"fingerprint"`
	Blobs       []string `json:"blobs"`
}

type indexFile struct {
	Models map[string]entry `json:"models"`
}

// State reports how loading model will go: CompileCached when every blob
// recorded at its last compile is still in the folder and nothing that
// decides the blob changed, else CompileFirst.
func (x *Index) State(model string) npu.CompileState {
	x.mu.Lock()
	defer x.mu.Unlock()
	idx := x.read()
	e, ok := idx.Models[model]
	if !ok || len(e.Blobs) == 0 || e.Fingerprint != x.fingerprint(model) {
		return npu.CompileFirst
	}
	for _, b := range e.Blobs {
		if st, err := os.Stat(filepath.Join(x.dir, b)); err != nil || !st.Mode().IsRegular() {
			return npu.CompileFirst
		}
	}
	return npu.CompileCached
}

// Track is called before model's load; the function it returns, after it,
// with the load's outcome. A load that worked and left new blobs in the
// folder records them as model's; one that found its blob leaves the
// record as it was.
func (x *Index) Track(model string) func(err error) {
	before := x.blobs()
	fp := x.fingerprint(model)
	return func(err error) {
		if err != nil {
			return
		}
		var added []string
		for b := range x.blobs() {
			if !before[b] {
				added = append(added, b)
			}
		}
		if len(added) == 0 || len(added) > maxBlobsPerModel {
			return // imported from the cache, or nothing attributable
		}
		slices.Sort(added)
		x.mu.Lock()
		defer x.mu.Unlock()
		idx := x.read()
		idx.Models[model] = entry{Fingerprint: fp, Blobs: added}
		if err := x.write(idx); err != nil {
			x.log.Warn("cannot record the compiled model's blobs", "model", model, "dir", x.dir, "err", err)
		}
	}
}

// blobs lists the blob files in the folder.
func (x *Index) blobs() map[string]bool {
	out := map[string]bool{}
	entries, err := os.ReadDir(x.dir)
	if err != nil {
		return out
	}
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".blob") {
			out[e.Name()] = true
		}
	}
	return out
}

// read loads the index; a missing or damaged one is empty (every model
// then compiles as if for the first time, which is the safe thing to say).
func (x *Index) read() indexFile {
	idx := indexFile{Models: map[string]entry{}}
	f, err := os.Open(filepath.Join(x.dir, IndexFile))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			x.log.Debug("cannot read the compiled-model index", "err", err)
		}
		return idx
	}
	defer func() { _ = f.Close() }()
	var read indexFile
	if err := json.NewDecoder(io.LimitReader(f, maxIndexBytes)).Decode(&read); err != nil || read.Models == nil {
		return idx
	}
	return read
}

// write replaces the index file whole (a temporary file renamed over it).
func (x *Index) write(idx indexFile) error {
	b, err := json.Marshal(idx)
	if err != nil {
		return err
	}
	if len(b) > maxIndexBytes {
		return fmt.Errorf("the index would exceed %d bytes", maxIndexBytes)
	}
	tmp, err := os.CreateTemp(x.dir, IndexFile+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(x.dir, IndexFile)); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return nil
}

// FolderFingerprint describes the files directly in dir (names, sizes,
// modification times), for a fingerprint: a model re-exported or its
// properties file edited changes it.
func FolderFingerprint(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		fmt.Fprintf(&b, "%s:%d:%d;", e.Name(), info.Size(), info.ModTime().UnixNano())
	}
	return b.String()
}
