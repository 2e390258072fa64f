package openaiapi

import (
	"context"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/wirefmt/openaiwire"
	"github.com/npud/npud/wire/relay"
	"github.com/npud/npud/wire/reqinfo"
)

// streamTranscript answers stream=true with OpenAI's transcription
// events, through the relay every streaming protocol shares: a
// `transcript.text.delta` per segment as the engine finishes it (per
// 30-second window on the simulated engine; all at the end where the
// engine gives its segments only then, as GenAI's C Whisper pipeline
// does), then `transcript.text.done` with the whole text and the usage.
// A failure before the first event is a real HTTP error; after it an
// error event and [DONE], as on chat.
func (a *API) streamTranscript(c *gin.Context, info *reqinfo.Info, job *npu.TranscribeRequest) {
	ctx := c.Request.Context()
	src := newTranscriptSource(a.cfg.Journal.Heartbeat)
	job.OnSegment = src.segment
	go func() {
		out, err := a.router.Transcribe(ctx, job)
		src.finish(out, err)
	}()
	if a.router.Simulated() {
		c.Header("X-Npud-Simulated", "true") // sent with the stream's headers
	}
	w := newSSEWriter(c.Writer, a.cfg.WriteTimeout)
	info.Record(relay.Run(ctx, w, src, &transcriptFraming{a: a, src: src, seconds: job.Seconds()},
		func(err error) {
			c.Writer.Header().Del("X-Npud-Simulated") // an error is no simulated answer
			a.fail(c.Writer, info, a.modelWorkError(err))
		}))
}

// transcriptSource hands a transcription's segments to the relay as the
// engine reports them. The engine never waits for the writer: segments
// are queued (a few per minute of audio) and the writer is signalled.
type transcriptSource struct {
	heartbeat time.Duration
	signal    chan struct{} // 1 slot: something changed

	mu       sync.Mutex
	pending  []npu.Segment
	heard    int  // segments reported through OnSegment
	wrote    bool // a delta went out
	lastText string
	done     bool
	out      npu.Transcript
	err      error
}

func newTranscriptSource(heartbeat time.Duration) *transcriptSource {
	return &transcriptSource{heartbeat: heartbeat, signal: make(chan struct{}, 1)}
}

func (s *transcriptSource) wake() {
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

// segment is the engine's OnSegment.
func (s *transcriptSource) segment(seg npu.Segment) {
	s.mu.Lock()
	s.pending = append(s.pending, seg)
	s.heard++
	s.mu.Unlock()
	s.wake()
}

func (s *transcriptSource) finish(out npu.Transcript, err error) {
	s.mu.Lock()
	s.done, s.out, s.err = true, out, err
	if err == nil {
		switch {
		case s.heard < len(out.Segments):
			// Those the engine did not report as it went.
			s.pending = append(s.pending, out.Segments[s.heard:]...)
		case len(out.Segments) == 0 && out.Text != "":
			s.pending = append(s.pending, npu.Segment{Text: out.Text})
		}
	}
	s.mu.Unlock()
	s.wake()
}

// Next implements relay.Source.
func (s *transcriptSource) Next(ctx context.Context) (npu.Event, error) {
	var beat <-chan time.Time
	if s.heartbeat > 0 {
		t := time.NewTimer(s.heartbeat)
		defer t.Stop()
		beat = t.C
	}
	for {
		s.mu.Lock()
		if len(s.pending) > 0 {
			seg := s.pending[0]
			s.pending = s.pending[1:]
			delta := seg.Text
			// Segments are joined with a space unless the model wrote one
			// (Whisper's segments start with theirs).
			if s.wrote && !strings.HasSuffix(s.lastText, " ") && !strings.HasPrefix(delta, " ") {
				delta = " " + delta
			}
			s.wrote, s.lastText = true, delta
			s.mu.Unlock()
			if delta == "" {
				continue
			}
			return npu.Event{Text: delta, Tokens: 1}, nil
		}
		if s.done {
			err := s.err
			s.mu.Unlock()
			if err != nil {
				return npu.Event{}, err
			}
			return npu.Event{Done: true, Result: npu.Result{FinishReason: npu.FinishStop}}, nil
		}
		s.mu.Unlock()
		select {
		case <-s.signal:
		case <-beat:
			return npu.Event{Heartbeat: true}, nil
		case <-ctx.Done():
			return npu.Event{}, context.Cause(ctx)
		}
	}
}

func (s *transcriptSource) transcript() npu.Transcript {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out
}

// transcriptFraming is OpenAI's transcription event stream: `data:` lines
// whose JSON says its type, no event names.
type transcriptFraming struct {
	a       *API
	src     *transcriptSource
	seconds float64
}

func (f *transcriptFraming) ContentType() string { return "text/event-stream" }
func (f *transcriptFraming) Open() []byte        { return nil }
func (f *transcriptFraming) Terminator() []byte  { return nil }

func (f *transcriptFraming) Text(ev *npu.Event) []byte {
	b := []byte(`data: {"type":"transcript.text.delta","delta":`)
	b = openaiwire.AppendJSONString(b, ev.Text)
	return append(b, "}\n\n"...)
}

func (f *transcriptFraming) Heartbeat(*npu.LoadStatus) []byte { return heartbeatFrame }

// End is transcript.text.done with the whole text and the usage, in the
// unit npud counts audio in (as the whole response's `usage`): seconds.
func (f *transcriptFraming) End(npu.Result) ([]byte, string) {
	b := []byte(`data: {"type":"transcript.text.done","text":`)
	b = openaiwire.AppendJSONString(b, f.src.transcript().Text)
	b = append(b, `,"usage":{"type":"duration","seconds":`...)
	b = strconv.AppendInt(b, int64(math.Ceil(f.seconds)), 10)
	return append(b, "}}\n\n"...), "stop"
}

// Fail is the in-band error after the 200, then [DONE], as on chat.
func (f *transcriptFraming) Fail(err error) ([]byte, string, error) {
	apiErr := f.a.modelWorkError(err)
	if apiErr.Status == statusClientClosed {
		return nil, "", err
	}
	return append(append([]byte(nil), errorFrame(apiErr)...), doneFrame...), "", err
}
