// Package worker runs an engine in worker processes, so that a native
// fault (a segfault, an abort, an OOM kill, a call that never returns)
// ends that process's streams with an error instead of taking the daemon
// down.
//
// The daemon side is Engine: an npu.Engine that starts one worker process
// per loaded model (the same npud binary, `npud worker`), hands it jobs and
// watches it. The worker side is Serve: it runs the real engine and does
// the daemon's jobs. They speak in frames (see frameReader) over the
// worker's standard input and output, one ordered stream each way: the
// daemon sends jobs and the sinks' answers (a STOP or CANCEL), the worker
// sends each generation's text, a compile's device and each job's
// outcome. One reader on the daemon's side passes them on in the order the
// worker sent them, so a generation's text needs no putting back in order
// and its outcome comes after the last of it.
package worker

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/npud/npud/npu"
)

// The kinds of job a worker runs.
const (
	jobLoad     = "load"
	jobUnload   = "unload"
	jobReload   = "reload"
	jobGenerate = "generate"
	jobEmbed    = "embed"
	// jobRerank: documents scored against a query (npu.Reranker).
	jobRerank = "rerank"
	// jobCount: a request's prompt rendered and counted
	// (npu.Engine.CountPrompt); nothing is generated.
	jobCount = "count"
	// jobTranscribe: speech to text (npu.Engine.Transcribe).
	jobTranscribe = "transcribe"
	jobDevices    = "devices"
	jobExit       = "exit"
)

// Job is one piece of work for a worker.
type Job struct {
	ID    int64
	Kind  string
	Model string
	Avoid []string // a load under AUTO: devices not to use
	// Request is a generation's (or a count's) request as JSON: gob drops
	// a pointer to a zero value (think: false would arrive as "unset").
	Request []byte
	Inputs  []string // embed; rerank: the documents
	Query   string   // rerank
	// Truncate: embed truncates inputs, rerank pairs, over the model's
	// length (npu.EmbedRequest.Truncate, npu.RerankRequest.Truncate).
	Truncate bool
	Audio    *npu.TranscribeRequest // transcribe
}

// Done is a job's outcome.
type Done struct {
	ID     int64
	Chunks int64 // a generation's streamer callbacks
	// StoppedAt is the callback at which the worker first answered its
	// engine STOP or CANCEL, 0 if it never did: the daemon takes the
	// tokens its engine ran past the sink's answer off the count.
	StoppedAt int64
	Result    npu.Result
	Device    string // load, reload: where the model runs
	Devices   []Device
	// Features is what the worker's engine can do (the devices job): the
	// daemon's side describes itself with it.
	Features npu.Features
	Vectors  [][]float32 // on the daemon's side: from the job's vector frames
	Tokens   int         // an embedding's or a rerank's input tokens, a count's prompt tokens
	// Ranked is a rerank's results, best first.
	Ranked []npu.RerankResult
	// Truncated is how many of an embedding's inputs or a rerank's pairs
	// were truncated.
	Truncated int
	// Transcript is a transcription's result.
	Transcript npu.Transcript
	Err        *WireError
}

// Device is a device the worker's engine sees.
type Device struct{ Name, FullName string }

// Compiling says which device the worker is about to compile a model for.
type Compiling struct{ Model, Device string }

// WireError carries an error across the process boundary by the name of
// its sentinel (npu.ErrorCode), so the daemon rebuilds an error of the same
// class: the APIs answer it, and the metrics count it, as in process.
type WireError struct {
	Code    string // npu.ErrorCode of the error; "" for an unclassified one
	Engine  string // set when it was an *npu.EngineError: the engine's name
	Invalid bool   // it was an *npu.InvalidRequestError
	Param   string // the InvalidRequestError's
	Message string // the error's text (an EngineError's: its cause's)
}

// toWire names err for the daemon.
func toWire(err error) *WireError {
	if err == nil {
		return nil
	}
	w := &WireError{Code: npu.ErrorCode(err), Message: err.Error()}
	var invalid *npu.InvalidRequestError
	var engineErr *npu.EngineError
	switch {
	case errors.As(err, &invalid):
		w.Invalid, w.Param, w.Message = true, invalid.Param, invalid.Message
	case errors.As(err, &engineErr) && engineErr.Cause != nil:
		w.Engine, w.Message = engineErr.Engine, engineErr.Cause.Error()
	}
	return w
}

// remoteError is an error the worker returned: its text, and the sentinel
// that classifies it.
type remoteError struct {
	msg  string
	kind error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.kind }

// errorOf rebuilds the worker's error: the same text, the same sentinel,
// an *npu.EngineError or *npu.InvalidRequestError where it was one.
func (w *WireError) errorOf() error {
	if w == nil {
		return nil
	}
	if w.Invalid {
		return &npu.InvalidRequestError{Param: w.Param, Message: w.Message}
	}
	var err error = &remoteError{w.Message, npu.Sentinel(w.Code)}
	if w.Engine != "" {
		err = &npu.EngineError{Engine: w.Engine, Cause: err}
	}
	return err
}

// FaultError ends the generations of a worker that crashed or hung; it
// wraps npu.ErrEngineCrashed or npu.ErrEngineHung.
type FaultError struct {
	Model  string
	Device string
	Cause  string // the exit status or signal, or what the watchdog saw
	Kind   error
	// unsent: the worker had died before the job reached it (see
	// call.unsent), so no job of its ran.
	unsent bool
}

func (e *FaultError) Error() string {
	return fmt.Sprintf("the worker running model %q on %s %v: %s; it is restarted", e.Model, orUnknown(e.Device), e.Kind, e.Cause)
}

func (e *FaultError) Unwrap() error { return e.Kind }

func orUnknown(device string) string {
	if device == "" {
		return "an unknown device"
	}
	return device
}

// The frames of the protocol. A frame is a 4-byte big-endian length and
// that many bytes: a kind, then the body. The text and the vectors, which
// are many, have bodies of their own; the rest is gob, one message a
// frame, from one encoder per direction.
const (
	frameJob       byte = 'j' // daemon → worker: a Job (gob)
	frameStatus    byte = 's' // daemon → worker: a job ID (uvarint) and the sink's STOP or CANCEL (a byte)
	frameChunk     byte = 'c' // worker → daemon: a job ID (uvarint) and one streamer callback's text
	frameVector    byte = 'v' // worker → daemon: a job ID (uvarint) and one embedding, float32 little endian
	frameCompiling byte = 'p' // worker → daemon: a Compiling (gob)
	frameDone      byte = 'd' // worker → daemon: a Done (gob), after the job's chunks or vectors
)

// The largest frames each side reads. The daemon reads its workers'
// frames as a native library's host wrote them, so they are small: one
// token's text, one embedding, an outcome whose big part (the vectors)
// travels in frames of its own. A worker reads the daemon's jobs, which
// may carry audio: gob spends at most 9 bytes a sample, so 1 GiB holds
// two hours (the default --max-audio-duration is 30 minutes).
const (
	maxReportFrame = 4 << 20
	maxJobFrame    = 1 << 30
	// maxVectorBytes bounds one embedding job's vectors on the daemon's
	// side (2048 inputs of 4096 dimensions are 32 MiB).
	maxVectorBytes = 256 << 20
)

// errProtocol marks a frame that breaks the protocol: too large, cut
// short inside itself, of an unknown kind, or not decoding. A worker that
// sends one is ended as a fault.
var errProtocol = errors.New("it broke the worker protocol")

// errUnsendable marks a message the writer could not put in a frame (it
// does not encode, or is too large): nothing was written.
var errUnsendable = errors.New("cannot be sent")

func protocolError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errProtocol, fmt.Sprintf(format, args...))
}

// frameWriter writes whole frames, one Write each, from any goroutine.
type frameWriter struct {
	mu  sync.Mutex
	w   io.Writer
	max int          // the largest frame the other side reads
	buf []byte       // the frame being written
	gob bytes.Buffer // the gob encoder's output for one message
	enc *gob.Encoder // one stream: types are described once
}

func newFrameWriter(w io.Writer, limit int) *frameWriter {
	f := &frameWriter{w: w, max: limit}
	f.enc = gob.NewEncoder(&f.gob)
	return f
}

// text writes a frame of kind whose body is id and then data.
func (f *frameWriter) text(kind byte, id int64, data string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.buf = binary.AppendUvarint(append(f.buf[:0], 0, 0, 0, 0, kind), uint64(id))
	f.buf = append(f.buf, data...)
	return f.flush()
}

// status writes the sink's answer to job id.
func (f *frameWriter) status(id int64, st npu.Status) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.buf = binary.AppendUvarint(append(f.buf[:0], 0, 0, 0, 0, frameStatus), uint64(id))
	f.buf = append(f.buf, byte(st))
	return f.flush()
}

// vector writes one embedding of job id.
func (f *frameWriter) vector(id int64, v []float32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.buf = binary.AppendUvarint(append(f.buf[:0], 0, 0, 0, 0, frameVector), uint64(id))
	for _, x := range v {
		f.buf = binary.LittleEndian.AppendUint32(f.buf, math.Float32bits(x))
	}
	return f.flush()
}

// message writes v as a gob frame of kind. The encoder writes after the
// frame's head, so a large job (audio) is not copied once more.
func (f *frameWriter) message(kind byte, v any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gob.Reset()
	f.gob.Write([]byte{0, 0, 0, 0, kind})
	if err := f.enc.Encode(v); err != nil {
		return fmt.Errorf("%w: %w", errUnsendable, err)
	}
	err := f.write(f.gob.Bytes())
	if f.gob.Cap() > 64<<10 {
		f.gob = bytes.Buffer{} // an audio job's buffer is not kept
	}
	return err
}

// flush writes the frame in buf.
func (f *frameWriter) flush() error { return f.write(f.buf) }

// write writes frame, its length put first.
func (f *frameWriter) write(frame []byte) error {
	n := len(frame) - 4
	if n > f.max {
		return fmt.Errorf("%w: a frame of %d bytes is larger than the other side reads (%d)", errUnsendable, n, f.max)
	}
	binary.BigEndian.PutUint32(frame, uint32(n))
	_, err := f.w.Write(frame)
	return err
}

// frameReader reads frames of at most max bytes. Every length is checked
// before anything is allocated for it, and a gob body is decoded from its
// frame alone: the gob decoder never reads, nor allocates for, more than
// the frame holds (the message types hold no maps, whose sizes gob takes
// on trust).
type frameReader struct {
	r   *bufio.Reader
	max int
	buf []byte
	src frameSource
	dec *gob.Decoder
}

func newFrameReader(r io.Reader, limit int) *frameReader {
	f := &frameReader{r: bufio.NewReaderSize(r, 64<<10), max: limit}
	f.dec = gob.NewDecoder(&f.src)
	return f
}

// next returns the next frame's kind and body; the body is good until the
// next call. io.EOF is the end of the stream between frames, and
// io.ErrUnexpectedEOF one inside a frame (the writer died writing).
func (f *frameReader) next() (byte, []byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(f.r, head[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(head[:])
	if n == 0 || uint64(n) > uint64(f.max) {
		return 0, nil, protocolError("a frame of %d bytes (at most %d)", n, f.max)
	}
	buf := f.buf
	if int(n) > cap(buf) {
		buf = make([]byte, n)
		if n <= 64<<10 {
			f.buf = buf // small frames reuse one buffer
		}
	}
	buf = buf[:n]
	if _, err := io.ReadFull(f.r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return buf[0], buf[1:], nil
}

// decode decodes a gob body, which must be exactly one message.
func (f *frameReader) decode(body []byte, v any) error {
	f.src.b = body
	if err := f.dec.Decode(v); err != nil {
		// The decoder's stream is lost with the frame: so is the peer.
		return protocolError("a message that does not decode: %v", err)
	}
	if len(f.src.b) != 0 {
		return protocolError("%d bytes after a message", len(f.src.b))
	}
	return nil
}

// idOf splits a body into the job ID it starts with and the rest.
func idOf(body []byte) (int64, []byte, error) {
	id, n := binary.Uvarint(body)
	if n <= 0 || id > math.MaxInt64 {
		return 0, nil, protocolError("a frame without a job ID")
	}
	return int64(id), body[n:], nil
}

// statusOf reads a status frame's body.
func statusOf(body []byte) (int64, npu.Status, error) {
	id, rest, err := idOf(body)
	if err != nil {
		return 0, 0, err
	}
	if len(rest) != 1 || (npu.Status(rest[0]) != npu.Stop && npu.Status(rest[0]) != npu.Cancel) {
		return 0, 0, protocolError("a status frame of job %d that says no STOP or CANCEL", id)
	}
	return id, npu.Status(rest[0]), nil
}

// vectorOf reads a vector frame's body.
func vectorOf(body []byte) (int64, []float32, error) {
	id, rest, err := idOf(body)
	if err != nil {
		return 0, nil, err
	}
	if len(rest)%4 != 0 {
		return 0, nil, protocolError("a vector of job %d that is not whole float32s", id)
	}
	v := make([]float32, len(rest)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(rest[4*i:]))
	}
	return id, v, nil
}

// frameSource is the gob decoder's input: the body of the frame being
// decoded, and nothing after it. It is an io.ByteReader, so the decoder
// reads it as it is, without a buffer of its own reading ahead.
type frameSource struct{ b []byte }

func (s *frameSource) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	return n, nil
}

func (s *frameSource) ReadByte() (byte, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	c := s.b[0]
	s.b = s.b[1:]
	return c, nil
}
