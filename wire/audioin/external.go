package audioin

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os/exec"
	"strconv"
	"time"
)

// External is the optional decoder for the formats no pure-Go library
// decodes well (Opus, WebM/Matroska, MP4/M4A with AAC, ADTS AAC): Debian's
// ffmpeg, run as a bounded subprocess. The file goes in on its stdin and
// 16 kHz mono float samples come out on its stdout (ffmpeg's own
// resampler, and its down-mix at unit gain); nothing else is read or written. It is started
// without a shell, with an empty environment (nothing of the daemon's,
// secrets included, reaches it), reading only its stdin
// (-protocol_whitelist pipe: no file or network a container could name),
// with the container forced to the one sniffed (no probing of other
// demuxers), and killed when the request ends or Timeout passes; its
// output is bounded by MaxDuration, its error output to 4 KiB.
type External struct {
	Path    string        // the ffmpeg binary, absolute
	Timeout time.Duration // for one file; 0: two minutes
}

// FindExternal resolves the --audio-decoder setting: "" looks for ffmpeg
// on PATH (nil when absent), "none" turns it off, anything else is the
// path of an ffmpeg binary, which must exist.
func FindExternal(setting string) (*External, error) {
	switch setting {
	case "none", "off":
		return nil, nil
	case "":
		path, err := exec.LookPath("ffmpeg")
		if err != nil {
			return nil, nil //nolint:nilerr // optional: without it those formats are refused with a clear 400
		}
		return &External{Path: path}, nil
	}
	path, err := exec.LookPath(setting)
	if err != nil {
		return nil, fmt.Errorf("--audio-decoder %q: %w", setting, err)
	}
	return &External{Path: path}, nil
}

// maxStderr bounds what is kept of ffmpeg's complaints.
const maxStderr = 4 << 10

// tailBuffer keeps the first max bytes written to it.
type tailBuffer struct {
	bytes.Buffer
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// decode runs ffmpeg on data, a file of container format demuxer.
func (x *External) decode(ctx context.Context, data []byte, demuxer, name string, l Limits, mem *meter) (Clip, error) {
	timeout := x.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// One second past the limit is read so that "longer" can be told from
	// "exactly the limit".
	maxSamples := int64(l.MaxDuration.Seconds()*SampleRate) + SampleRate
	cmd := exec.CommandContext(ctx, x.Path, "-hide_banner", "-loglevel", "error", "-nostats",
		"-protocol_whitelist", "pipe", "-f", demuxer, "-i", "pipe:0",
		"-map", "0:a:0", "-vn", "-sn", "-dn", "-threads", "1",
		// Down-mixed with unit gain (rematrix_maxval=1): for stereo the
		// average of the channels, as the built-in decoders mix.
		"-af", "aresample=rematrix_maxval=1", "-ac", "1", "-ar", strconv.Itoa(SampleRate), "-f", "f32le", "-c:a", "pcm_f32le",
		"-t", strconv.FormatFloat(float64(maxSamples)/SampleRate, 'f', 3, 64), "pipe:1")
	cmd.Env = []string{}
	cmd.Stdin = bytes.NewReader(data)
	stderr := &tailBuffer{max: maxStderr}
	cmd.Stderr = stderr
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		return Clip{}, fmt.Errorf("the external audio decoder: %w", err)
	}
	if err := cmd.Start(); err != nil {
		if parent.Err() != nil {
			return Clip{}, context.Cause(parent)
		}
		return Clip{}, fmt.Errorf("the external audio decoder %s could not start: %w", x.Path, err)
	}
	samples, readErr := readFloats(out, maxSamples, mem)
	if readErr != nil {
		_ = cmd.Process.Kill()
	}
	waitErr := cmd.Wait()
	switch {
	case parent.Err() != nil: // the request ended: the decoder was killed
		return Clip{}, context.Cause(parent)
	case ctx.Err() != nil:
		return Clip{}, invalid("the external audio decoder took longer than %s on the %s file", timeout, name)
	case errors.Is(readErr, errTooManySamples):
		return Clip{}, tooLong(time.Duration(float64(maxSamples)/SampleRate*float64(time.Second)), l.MaxDuration)
	case readErr != nil:
		return Clip{}, fmt.Errorf("reading the external audio decoder: %w", readErr)
	case waitErr != nil:
		return Clip{}, &DecoderError{Format: name, Err: waitErr, Stderr: stderr.String()}
	}
	if int64(len(samples)) > int64(l.MaxDuration.Seconds()*SampleRate)+SampleRate/100 {
		return Clip{}, tooLong(time.Duration(float64(len(samples))/SampleRate*float64(time.Second)), l.MaxDuration)
	}
	if len(samples) == 0 {
		return Clip{}, invalid("the %s file has no audio", name)
	}
	for i, v := range samples {
		samples[i] = float32(clamp(float64(v)))
	}
	return Clip{Samples: samples, SourceRate: SampleRate, SourceChannels: 1, SourceFormat: name}, nil
}

// DecoderError is the external decoder refusing a file: the client's
// fault (ErrInvalid). Stderr is what it said, for the log only: it may
// quote the file.
type DecoderError struct {
	Format string
	Err    error
	Stderr string
}

func (e *DecoderError) Error() string {
	return fmt.Sprintf("the %s file could not be decoded (the external decoder failed: %v)", e.Format, e.Err)
}

func (e *DecoderError) Unwrap() []error { return []error{ErrInvalid, e.Err} }

var errTooManySamples = errors.New("too many samples")

// readFloats reads little-endian float32s until EOF, at most limit of them.
func readFloats(r io.Reader, limit int64, mem *meter) ([]float32, error) {
	var out []float32
	buf := make([]byte, 64<<10)
	var err error
	var carry []byte
	for {
		n, readErr := r.Read(buf[len(carry):])
		chunk := buf[:len(carry)+n]
		whole := len(chunk) / 4 * 4
		if int64(len(out)+whole/4) > limit {
			return nil, errTooManySamples
		}
		if out, err = mem.room(out, whole/4, int64(len(buf))); err != nil {
			return nil, err
		}
		for i := 0; i < whole; i += 4 {
			out = append(out, math.Float32frombits(binary.LittleEndian.Uint32(chunk[i:])))
		}
		carry = append(carry[:0], chunk[whole:]...)
		copy(buf, carry)
		if errors.Is(readErr, io.EOF) {
			return out, nil
		}
		if readErr != nil {
			return nil, readErr
		}
	}
}
