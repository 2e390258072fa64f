// Package streamwriter writes streamed HTTP responses frame by frame for
// every protocol: it commits the status and headers once, bounds each write
// with a deadline so a client that stops reading cannot pin a handler, and
// flushes when told.
package streamwriter

import (
	"errors"
	"net/http"
	"time"
)

// Writer writes one streamed response.
type Writer struct {
	w            http.ResponseWriter
	rc           *http.ResponseController
	writeTimeout time.Duration
	committed    bool
}

// New returns a writer for w; writeTimeout 0 means no deadline.
func New(w http.ResponseWriter, writeTimeout time.Duration) *Writer {
	return &Writer{w: w, rc: http.NewResponseController(w), writeTimeout: writeTimeout}
}

// Committed reports whether the status line has been sent; until then a
// failure can still be answered with a real HTTP error.
func (s *Writer) Committed() bool { return s.committed }

// Commit sends 200 with a stream's headers: contentType, no caching, no
// proxy buffering (nginx holds responses without X-Accel-Buffering: no)
// and an explicit identity encoding, which keeps proxies' gzip away (a
// compressor would hold events back).
func (s *Writer) Commit(contentType string) {
	h := s.w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set("Content-Encoding", "identity")
	h.Del("Content-Length")
	s.w.WriteHeader(http.StatusOK)
	s.committed = true
}

// Write sends frame, flushing when asked.
func (s *Writer) Write(frame []byte, flush bool) error {
	if s.writeTimeout > 0 {
		if err := s.rc.SetWriteDeadline(time.Now().Add(s.writeTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
	}
	if _, err := s.w.Write(frame); err != nil {
		return err
	}
	if flush {
		return s.rc.Flush()
	}
	return nil
}
