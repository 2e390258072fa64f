// Package hub downloads model repositories from a Hugging Face–compatible
// hub into a models directory: pinned to the revision it listed, resumed
// with HTTP ranges when a transfer breaks, retried with backoff, never
// written past the size the hub announced, with sizes and sha256 checked
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
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
	"unicode"
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
	// HTTP is the client for every request; nil means one with connect,
	// TLS and response-header timeouts (no whole-request timeout: a
	// weights file takes as long as it takes).
	HTTP *http.Client
	// Attempts is how many times a request is tried when the network or
	// the hub fails (5xx, 429, a broken transfer); 0 means 4. A broken
	// file transfer resumes where it stopped.
	Attempts int
	// Backoff is the first wait between attempts, doubled each time up
	// to 30 s; 0 means 1 s.
	Backoff time.Duration
	// IdleTimeout fails a transfer that delivers nothing for this long
	// (then it is retried); 0 means 60 s.
	IdleTimeout time.Duration
	// MaxModelBytes refuses a repository whose files the hub announces
	// as larger in total (--max-model-bytes); 0 means no cap.
	MaxModelBytes int64
	// FreeSpace reports the bytes free for an unprivileged writer on the
	// file system holding dir; nil means the operating system's answer
	// (see freeSpace). A pull needs what it still has to write plus
	// SpaceMargin free before it writes anything.
	FreeSpace func(dir string) (int64, error)
}

// ErrNoSpace is returned (wrapped) when the models folder's file system
// lacks the room a pull needs: what the hub announced, plus a margin.
var ErrNoSpace = errors.New("not enough free disk space")

// ErrModelTooLarge is returned (wrapped) when a repository is larger than
// Client.MaxModelBytes.
var ErrModelTooLarge = errors.New("the model is larger than allowed")

// SpaceMargin is the room a pull leaves free beyond what it writes: 5 % of
// the model, at least 256 MiB, so a pull never fills the disk the daemon,
// its logs and its compiled-model cache live on.
func SpaceMargin(total int64) int64 { return max(total/20, 256<<20) }

// defaultHTTP bounds everything but the length of a body. A pull makes
// a few requests of long transfers: no connection is kept between them.
func defaultHTTP() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 15 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   15 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
		DisableKeepAlives:     true,
		ForceAttemptHTTP2:     true,
	}}
}

// ErrTooLarge is returned (wrapped) when the hub sends more bytes than it
// announced for a file: the download stops there instead of filling the
// disk.
var ErrTooLarge = errors.New("the hub sent more than the size it announced")

// statusError is a hub answer other than success.
type statusError struct {
	what   string
	status string
	code   int
}

func (e *statusError) Error() string { return fmt.Sprintf("%s: hub answered %s", e.what, e.status) }

// retryable: worth another attempt (the network, the hub's own trouble),
// not a refusal that would only repeat.
func retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, ErrCorrupt) || errors.Is(err, ErrTooLarge) {
		return false
	}
	var se *statusError
	if errors.As(err, &se) {
		return se.code >= 500 || se.code == http.StatusTooManyRequests || se.code == http.StatusRequestTimeout
	}
	var pe *os.PathError
	return !errors.As(err, &pe) // a local file error would only repeat
}

func (c *Client) attempts() int {
	if c.Attempts > 0 {
		return c.Attempts
	}
	return 4
}

// retry runs op until it succeeds, fails for good, runs out of attempts
// or ctx ends, waiting with exponential backoff between attempts.
func (c *Client) retry(ctx context.Context, op func() error) error {
	wait := c.Backoff
	if wait <= 0 {
		wait = time.Second
	}
	var err error
	for attempt := 1; ; attempt++ {
		if err = op(); !retryable(err) || attempt >= c.attempts() || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (after: %w)", context.Cause(ctx), err)
		case <-t.C:
		}
		wait = min(wait*2, 30*time.Second)
	}
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
		hc = defaultHTTP()
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
	var rev string
	var files []entry
	err := c.retry(ctx, func() (err error) {
		rev, files, err = c.list(ctx, repo)
		return err
	})
	if err != nil {
		return err
	}
	if !hasModel(files) {
		return fmt.Errorf("repository %q has no openvino_model.xml (nor a VLM's openvino_language_model.xml, nor Whisper's openvino_encoder_model.xml and openvino_decoder_model.xml): not an OpenVINO IR model", repo)
	}
	partial := dest + ".partial"
	if err := c.checkRoom(repo, files, modelsDir, partial); err != nil {
		return err
	}
	for _, f := range files {
		if err := c.fetch(ctx, repo, rev, f, partial, progress); err != nil {
			return err
		}
	}
	progress(Progress{Status: "verifying sha256 digest"})
	if err := os.Rename(partial, dest); err != nil {
		return fmt.Errorf("moving the finished download into place: %w", err)
	}
	return nil
}

// checkRoom refuses a pull, before anything is written, that is larger
// than MaxModelBytes or needs more than the disk has free, margin
// included. What a partial folder already holds counts as written.
func (c *Client) checkRoom(repo string, files []entry, modelsDir, partial string) error {
	var total, toWrite int64
	for _, f := range files {
		size := f.size()
		total += size
		have := int64(0)
		if st, err := os.Stat(filepath.Join(partial, filepath.FromSlash(f.Path))); err == nil && st.Size() <= size {
			have = st.Size()
		}
		toWrite += size - have
	}
	if c.MaxModelBytes > 0 && total > c.MaxModelBytes {
		return fmt.Errorf("repository %q holds %d bytes, more than --max-model-bytes %d: %w", repo, total, c.MaxModelBytes, ErrModelTooLarge)
	}
	free := c.FreeSpace
	if free == nil {
		free = freeSpace
	}
	if err := os.MkdirAll(modelsDir, 0o755); err != nil {
		return err
	}
	avail, err := free(modelsDir)
	if err != nil {
		return fmt.Errorf("free space in %s: %w", modelsDir, err)
	}
	if need := toWrite + SpaceMargin(total); avail < need {
		return fmt.Errorf("repository %q needs %d more bytes in %s plus a margin of %d, and %d are free: %w",
			repo, toWrite, modelsDir, SpaceMargin(total), avail, ErrNoSpace)
	}
	return nil
}

// size is the file's size as the hub announced it (its LFS object's for
// weights).
func (e entry) size() int64 {
	if e.LFS != nil {
		return e.LFS.Size
	}
	return e.Size
}

func hasModel(files []entry) bool {
	encoder, decoder := false, false
	for _, f := range files {
		switch f.Path {
		case "openvino_model.xml", "openvino_language_model.xml": // an LLM, or a VLM
			return true
		case "openvino_encoder_model.xml":
			encoder = true
		case "openvino_decoder_model.xml":
			decoder = true
		}
	}
	return encoder && decoder // Whisper (a speech model)
}

// maxListing bounds a repository listing (a hostile hub could send an
// endless one).
const maxListing = 16 << 20

// getJSON decodes the answer to u into v.
func (c *Client) getJSON(ctx context.Context, what, u string, v any) error {
	resp, err := c.get(ctx, u, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &statusError{what: what, status: resp.Status, code: resp.StatusCode}
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxListing)).Decode(v); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// list resolves the repository's main branch to a commit and returns that
// commit's files: every file is then fetched at that commit, so a
// repository that changes during the pull cannot give a mix of versions.
func (c *Client) list(ctx context.Context, repo string) (rev string, files []entry, err error) {
	var info struct {
		SHA string `json:"sha"`
	}
	if err := c.getJSON(ctx, "resolving "+repo, fmt.Sprintf("%s/api/models/%s/revision/main", c.endpoint(), repo), &info); err != nil {
		return "", nil, err
	}
	if !validRevision(info.SHA) {
		return "", nil, fmt.Errorf("resolving %s: the hub gave no usable commit id (%q)", repo, info.SHA)
	}
	var all []entry
	if err := c.getJSON(ctx, "listing "+repo, fmt.Sprintf("%s/api/models/%s/tree/%s?recursive=true", c.endpoint(), repo, info.SHA), &all); err != nil {
		return "", nil, err
	}
	for _, e := range all {
		if e.Type != "file" {
			continue
		}
		if strings.HasPrefix(e.Path, "/") || strings.Contains(e.Path, "..") || strings.ContainsRune(e.Path, '\\') ||
			strings.IndexFunc(e.Path, unicode.IsControl) >= 0 { // a name that would drive a terminal or a log
			return "", nil, fmt.Errorf("listing %s: unsafe path %q", repo, e.Path)
		}
		if e.Size < 0 || (e.LFS != nil && e.LFS.Size < 0) {
			return "", nil, fmt.Errorf("listing %s: %q has a negative size", repo, e.Path)
		}
		files = append(files, e)
	}
	return info.SHA, files, nil
}

// validRevision: a commit id, hexadecimal (it goes into URLs).
func validRevision(s string) bool {
	if len(s) < 7 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

func touch(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// fetch downloads one file of revision rev into dir, resuming a partial
// one (also after a broken transfer, on retry), and checks it.
func (c *Client) fetch(ctx context.Context, repo, rev string, f entry, dir string, progress func(Progress)) error {
	local := filepath.Join(dir, filepath.FromSlash(f.Path))
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		return err
	}
	size, sum := f.Size, ""
	if f.LFS != nil {
		size, sum = f.LFS.Size, f.LFS.OID
	}
	err := c.retry(ctx, func() error {
		have := int64(0)
		if st, err := os.Stat(local); err == nil {
			have = st.Size()
		}
		if have > size {
			have = 0 // not a prefix of this file: start again
		}
		if have == size {
			if size == 0 { // an empty file: nothing to fetch, but it must be there
				return touch(local)
			}
			return nil
		}
		return c.resume(ctx, repo, rev, f.Path, local, have, size, progress)
	})
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			_ = os.Remove(local) // what it kept is not this file; the error says why
		}
		return err
	}
	if err := verify(local, size, sum); err != nil {
		_ = os.Remove(local) // the next pull starts this file again
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	progress(Progress{Status: "downloading " + f.Path, File: f.Path, Total: size, Completed: size})
	return nil
}

// Progress is reported at most this often within a file (and at its end),
// so a multi-GB file shows its bytes moving without a flood of updates.
const (
	progressBytes    = 1 << 20
	progressInterval = 200 * time.Millisecond
)

// resume appends bytes [have, size) of file at revision rev to local. It
// never writes past size: a hub that sends more is cut off.
func (c *Client) resume(ctx context.Context, repo, rev, file, local string, have, size int64, progress func(Progress)) error {
	u := fmt.Sprintf("%s/%s/resolve/%s/%s", c.endpoint(), repo, rev, escapePath(file))
	header := http.Header{}
	if have > 0 {
		header.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	// The idle timer cancels a transfer that stalls; every read re-arms it.
	idle := c.IdleTimeout
	if idle <= 0 {
		idle = time.Minute
	}
	reqCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stalled := fmt.Errorf("downloading %s: nothing received for %s", file, idle)
	timer := time.AfterFunc(idle, func() { cancel(stalled) })
	defer timer.Stop()
	resp, err := c.get(reqCtx, u, header)
	if err != nil {
		if cause := context.Cause(reqCtx); cause != nil && ctx.Err() == nil {
			err = cause // the idle timer: retryable
		}
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
		return &statusError{what: "downloading " + file, status: resp.Status, code: resp.StatusCode}
	}
	out, err := os.OpenFile(local, flags, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = out.Close() }() // closed, and checked, below on success
	buf := make([]byte, 256<<10)
	reported, reportedAt := have, time.Now()
	for {
		n, rerr := resp.Body.Read(buf)
		timer.Reset(idle)
		if n > 0 {
			if int64(n) > size-have {
				return fmt.Errorf("downloading %s: more than the %d bytes announced: %w", file, size, ErrTooLarge)
			}
			if _, err := out.Write(buf[:n]); err != nil {
				return err
			}
			have += int64(n)
			if have-reported >= progressBytes || time.Since(reportedAt) >= progressInterval || have == size {
				progress(Progress{Status: "downloading " + file, File: file, Total: size, Completed: have})
				reported, reportedAt = have, time.Now()
			}
		}
		if errors.Is(rerr, io.EOF) {
			return out.Close()
		}
		if rerr != nil {
			if cause := context.Cause(reqCtx); cause != nil && ctx.Err() == nil {
				rerr = cause // the idle timer: retryable
			}
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
	defer func() { _ = f.Close() }() // read only
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
