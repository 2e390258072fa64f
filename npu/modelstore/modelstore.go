// Package modelstore owns the models folder on disk: which subfolders are
// models, and pulling, copying and deleting them. It is pure Go (no cgo),
// so it builds and is tested without OpenVINO; the OpenVINO engine serves
// what it lists.
//
// Its guarantees: a folder is a model only when complete (pulls and copies
// are written under a temporary name and renamed into place; those names
// are never listed); a pull or copy that fails leaves nothing behind; one
// pull per repository runs at a time (a second one joins it); names that
// clients send are checked before they touch the disk.
package modelstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/hub"
)

// partialSuffix marks a folder still being written (a pull's or a copy's).
const partialSuffix = ".partial"

// maxName bounds a model (folder) name.
const maxName = 200

// Store is one models folder.
type Store struct {
	dir string
	hub *hub.Client // nil: pulling is not configured

	mu    sync.Mutex
	pulls map[string]*pull // running pulls by repository
	busy  map[string]bool  // model names a pull or copy is writing
}

// New returns the store of dir; hub may be nil.
func New(dir string, h *hub.Client) *Store {
	return &Store{dir: dir, hub: h, pulls: map[string]*pull{}, busy: map[string]bool{}}
}

// Dir is the models folder.
func (s *Store) Dir() string { return s.dir }

// Path is the folder of model name.
func (s *Store) Path(name string) string { return filepath.Join(s.dir, name) }

// ModelIR is the IR that makes a folder a model: the language model's
// openvino_model.xml, a vision-language model's
// openvino_language_model.xml (optimum-intel's export of a VLM), or a
// speech model's encoder (see IsSpeechModel).
func ModelIR(dir string) string {
	switch {
	case HasVisionEncoder(dir):
		return filepath.Join(dir, "openvino_language_model.xml")
	case IsSpeechModel(dir):
		return filepath.Join(dir, WhisperEncoderIR)
	}
	return filepath.Join(dir, "openvino_model.xml")
}

// Scan lists the models: the subfolders that hold an OpenVINO IR model
// (see ModelIR), sorted by name, never one still being written.
// contextLength is what each reports as its context.
func (s *Store) Scan(contextLength int) ([]npu.ModelInfo, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("reading models directory: %w", err)
	}
	var out []npu.ModelInfo
	for _, e := range entries {
		if !e.IsDir() || ValidName(e.Name()) != nil {
			continue // temporary folders and names no client could ask for
		}
		st, err := os.Stat(ModelIR(filepath.Join(s.dir, e.Name())))
		if err != nil {
			continue // not a model folder
		}
		dir := filepath.Join(s.dir, e.Name())
		out = append(out, npu.ModelInfo{ID: e.Name(), OwnedBy: "openvino", Created: st.ModTime(),
			ContextLength: contextLength, Size: dirSize(dir), Details: Describe(dir, e.Name())})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// dirSize is the size of the files under dir (a model's weights and
// tokenizers), for /api/tags and /api/show.
func dirSize(dir string) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil // a file that vanished or cannot be read adds nothing
	})
	return total
}

// ValidName checks a model name a client sent: a plain folder name of
// letters, digits, '.', '_' and '-', starting with a letter or digit, at
// most 200 bytes, and not a temporary folder's. The error is a request
// error (a 400).
func ValidName(name string) error {
	bad := func(why string) error {
		return &npu.InvalidRequestError{Param: "model", Message: fmt.Sprintf("model name %q %s", clip(name), why)}
	}
	switch {
	case name == "":
		return bad("is empty")
	case len(name) > maxName:
		return bad(fmt.Sprintf("is longer than %d bytes", maxName))
	case strings.HasSuffix(name, partialSuffix):
		return bad("ends in " + partialSuffix + ", which marks a folder being written")
	case !alnum(name[0]):
		return bad("must start with a letter or a digit")
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !alnum(c) && c != '.' && c != '_' && c != '-' {
			return bad("may hold only letters, digits, '.', '_' and '-'")
		}
	}
	return nil
}

// ValidRepo checks a hub repository name: OWNER/NAME, each part a valid
// model name of at most 96 bytes.
func ValidRepo(repo string) error {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || len(owner) > 96 || len(name) > 96 || ValidName(owner) != nil || ValidName(name) != nil || strings.Contains(repo, "..") {
		return &npu.InvalidRequestError{Param: "model", Message: fmt.Sprintf(
			"repository %q: want OWNER/NAME, each of letters, digits, '.', '_' and '-' (at most 96)", clip(repo))}
	}
	return nil
}

func alnum(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' }

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// claim marks name as being written; it fails when the model exists or
// another pull or copy is writing it.
func (s *Store) claimLocked(name string) error {
	if s.busy[name] {
		return fmt.Errorf("model %q is being written by another pull or copy", name)
	}
	if _, err := os.Stat(s.Path(name)); err == nil {
		return fmt.Errorf("model %q already exists", name)
	}
	s.busy[name] = true
	return nil
}

func (s *Store) release(name string) {
	s.mu.Lock()
	delete(s.busy, name)
	s.mu.Unlock()
}

// Copy copies model source to destination. The copy is written under a
// temporary name and renamed into place when complete; a failed copy
// leaves nothing behind.
func (s *Store) Copy(ctx context.Context, source, destination string) error {
	if err := ValidName(source); err != nil {
		return err
	}
	if err := ValidName(destination); err != nil {
		var ie *npu.InvalidRequestError
		if errors.As(err, &ie) {
			ie.Param = "destination"
		}
		return err
	}
	if _, err := os.Stat(ModelIR(s.Path(source))); err != nil {
		return fmt.Errorf("model %q: %w", source, npu.ErrModelNotFound)
	}
	s.mu.Lock()
	err := s.claimLocked(destination)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	defer s.release(destination)
	tmp := s.Path(destination) + partialSuffix
	if err := os.RemoveAll(tmp); err != nil { // a copy a crash interrupted
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.CopyFS(tmp, os.DirFS(s.Path(source))); err != nil {
		_ = os.RemoveAll(tmp) // best effort: the copy error is the one to report
		return fmt.Errorf("copying model %q to %q: %w", source, destination, err)
	}
	if err := os.Rename(tmp, s.Path(destination)); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("copying model %q to %q: %w", source, destination, err)
	}
	return nil
}

// Delete removes model name's folder. The caller makes sure nothing uses
// it (the engine has unloaded it).
func (s *Store) Delete(name string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	s.mu.Lock()
	busy := s.busy[name]
	s.mu.Unlock()
	if busy {
		return fmt.Errorf("model %q is being written by a pull or copy", name)
	}
	if _, err := os.Stat(ModelIR(s.Path(name))); err != nil {
		return fmt.Errorf("model %q: %w", name, npu.ErrModelNotFound)
	}
	if err := os.RemoveAll(s.Path(name)); err != nil {
		return fmt.Errorf("deleting model %q: %w", name, err)
	}
	return nil
}
