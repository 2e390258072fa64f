// Package hub downloads model repositories from a Hugging Face–compatible
// hub into a models directory: resumable, with sizes and sha256 checked
// where the hub gives them, written to a partial folder and renamed into
// place only when complete.
package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// DefaultEndpoint is used when neither the configuration nor HF_ENDPOINT
// names a hub.
const DefaultEndpoint = "https://huggingface.co"

// ErrCorrupt is returned (wrapped) when a downloaded file does not match
// the size or sha256 the hub announced; the file is removed.
var ErrCorrupt = errors.New("downloaded file does not match the hub's checksum")

// Client talks to one hub.
type Client struct {
	Endpoint string // base URL; "" means HF_ENDPOINT, else DefaultEndpoint
	Token    string // optional bearer token
	HTTP     *http.Client
}

// Progress reports a pull as it goes, in the shape Ollama clients show.
type Progress struct {
	Status    string
	File      string
	Total     int64
	Completed int64
}

// entry is one file of a repository listing.
type entry struct {
	Type string `json:"type"`
	Path string `json:"path"`
	Size int64  `json:"size"`
	LFS  *struct {
		OID  string `json:"oid"` // sha256
		Size int64  `json:"size"`
	} `json:"lfs"`
}

func (c *Client) endpoint() string {
	if c.Endpoint != "" {
		return strings.TrimSuffix(c.Endpoint, "/")
	}
	if e := os.Getenv("HF_ENDPOINT"); e != "" {
		return strings.TrimSuffix(e, "/")
	}
	return DefaultEndpoint
}

func (c *Client) get(ctx context.Context, u string, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	return hc.Do(req)
}

// ModelName is the folder (and model) name a repository is pulled into:
// its last path element ("OpenVINO/Phi-3-mini-int4-ov" → "Phi-3-mini-int4-ov").
func ModelName(repo string) string { return path.Base(strings.Trim(repo, "/")) }

// Download fetches repo's files into modelsDir/ModelName(repo). A partial
// folder from an interrupted pull is resumed.
func (c *Client) Download(ctx context.Context, repo, modelsDir string, progress func(Progress)) error {
	if progress == nil {
		progress = func(Progress) {}
	}
	if strings.Count(strings.Trim(repo, "/"), "/") != 1 || strings.Contains(repo, "..") {
		return fmt.Errorf("repository %q: want owner/name", repo)
	}
	dest := filepath.Join(modelsDir, ModelName(repo))
	if _, err := os.Stat(dest); err == nil {
		return fmt.Errorf("model %q already exists in %s", ModelName(repo), modelsDir)
	}
	progress(Progress{Status: "pulling manifest"})
	files, err := c.list(ctx, repo)
	if err != nil {
		return err
	}
	if !hasModel(files) {
		return fmt.Errorf("repository %q has no openvino_model.xml: not an OpenVINO IR model", repo)
	}
	partial := dest + ".partial"
	for _, f := range files {
		if err := c.fetch(ctx, repo, f, partial, progress); err != nil {
			return err
		}
	}
	progress(Progress{Status: "verifying sha256 digest"})
	if err := os.Rename(partial, dest); err != nil {
		return fmt.Errorf("moving the finished download into place: %w", err)
	}
	return nil
}

func hasModel(files []entry) bool {
	for _, f := range files {
		if f.Path == "openvino_model.xml" {
			return true
		}
	}
	return false
}

// list returns the repository's files.
func (c *Client) list(ctx context.Context, repo string) ([]entry, error) {
	u := fmt.Sprintf("%s/api/models/%s/tree/main?recursive=true", c.endpoint(), repo)
	resp, err := c.get(ctx, u, nil)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", repo, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("listing %s: hub answered %s", repo, resp.Status)
	}
	var all []entry
	if err := json.NewDecoder(resp.Body).Decode(&all); err != nil {
		return nil, fmt.Errorf("listing %s: %w", repo, err)
	}
	var files []entry
	for _, e := range all {
		if e.Type != "file" {
			continue
		}
		if strings.HasPrefix(e.Path, "/") || strings.Contains(e.Path, "..") {
			return nil, fmt.Errorf("listing %s: unsafe path %q", repo, e.Path)
		}
		files = append(files, e)
	}
	return files, nil
}

// fetch downloads one file into dir, resuming a partial one, and checks it.
func (c *Client) fetch(ctx context.Context, repo string, f entry, dir string, progress func(Progress)) error {
	local := filepath.Join(dir, filepath.FromSlash(f.Path))
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		return err
	}
	size, sum := f.Size, ""
	if f.LFS != nil {
		size, sum = f.LFS.Size, f.LFS.OID
	}
	have := int64(0)
	if st, err := os.Stat(local); err == nil {
		have = st.Size()
	}
	if have > size {
		have = 0 // not a prefix of this file: start again
	}
	if have < size {
		if err := c.resume(ctx, repo, f.Path, local, have, size, progress); err != nil {
			return err
		}
	}
	if err := verify(local, size, sum); err != nil {
		os.Remove(local) // the next pull starts this file again
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	progress(Progress{Status: "downloading " + f.Path, File: f.Path, Total: size, Completed: size})
	return nil
}

// resume appends bytes [have, size) of file to local.
func (c *Client) resume(ctx context.Context, repo, file, local string, have, size int64, progress func(Progress)) error {
	u := fmt.Sprintf("%s/%s/resolve/main/%s", c.endpoint(), repo, escapePath(file))
	header := http.Header{}
	if have > 0 {
		header.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	resp, err := c.get(ctx, u, header)
	if err != nil {
		return fmt.Errorf("downloading %s: %w", file, err)
	}
	defer resp.Body.Close()
	flags := os.O_WRONLY | os.O_CREATE | os.O_APPEND
	switch resp.StatusCode {
	case http.StatusPartialContent:
	case http.StatusOK:
		flags |= os.O_TRUNC // the hub ignored the range: take the whole file
		have = 0
	default:
		return fmt.Errorf("downloading %s: hub answered %s", file, resp.Status)
	}
	out, err := os.OpenFile(local, flags, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	buf := make([]byte, 256<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if _, err := out.Write(buf[:n]); err != nil {
				return err
			}
			have += int64(n)
			progress(Progress{Status: "downloading " + file, File: file, Total: size, Completed: have})
		}
		if rerr == io.EOF {
			return out.Close()
		}
		if rerr != nil {
			return fmt.Errorf("downloading %s (%d of %d bytes kept for resuming): %w", file, have, size, rerr)
		}
	}
}

func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

// verify checks a file's size and, when known, its sha256.
func verify(local string, size int64, sum string) error {
	f, err := os.Open(local)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return err
	}
	if n != size {
		return fmt.Errorf("%d bytes, the hub announced %d: %w", n, size, ErrCorrupt)
	}
	if sum != "" && hex.EncodeToString(h.Sum(nil)) != strings.ToLower(sum) {
		return fmt.Errorf("sha256 %x, the hub announced %s: %w", h.Sum(nil), sum, ErrCorrupt)
	}
	return nil
}
