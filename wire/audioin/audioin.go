// Package audioin turns the audio files clients upload into what a speech
// model takes: 16 kHz mono float32 samples in [-1, 1], the input GenAI's
// Whisper pipeline expects (openvino.genai
// src/c/include/openvino/genai/c/whisper_pipeline.h: "raw speech ... 16 kHz"
// float array; src/cpp/src/whisper/feature_extractor.cpp works at 16000 Hz),
// within bounds on the file's size and its duration.
//
// It decodes WAV (RIFF/WAVE: integer PCM of 8, 16, 24 or 32 bits, IEEE
// float of 32 or 64 bits, WAVE_FORMAT_EXTENSIBLE of either, any sample rate
// and any number of channels) and, with pure-Go decoders, FLAC, MP3 and Ogg
// Vorbis (compressed.go). Channels are averaged; the rate is changed with
// a windowed-sinc resampler (resample.go). Opus, WebM, MP4/M4A and AAC go
// to the optional external decoder (external.go) when one is configured.
// A file it cannot decode is refused with a message that lists what it
// can.
package audioin

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/npud/npud/wire/membudget"
)

// SampleRate is the rate of every decoded clip: Whisper's.
const SampleRate = 16000

// Supported says what DecodeContext reads, with the external decoder or
// without it, for error messages and docs.
func Supported(ext *External) string {
	s := "WAV (8/16/24/32-bit integer PCM or 32/64-bit float, any sample rate and channel count), FLAC, MP3, Ogg Vorbis"
	if ext != nil {
		return s + ", and through ffmpeg Ogg Opus, WebM/Matroska, MP4/M4A (AAC), AAC (ADTS) and AIFF"
	}
	return s + " (Opus, WebM, M4A and AAC need ffmpeg: --audio-decoder)"
}

// Limits bound one upload.
type Limits struct {
	MaxBytes    int64         // the file as sent
	MaxDuration time.Duration // the audio it holds
	MaxChannels int
	// Memory is the budget decoded audio is counted against, across
	// requests (--max-audio-memory); nil: none.
	Memory *membudget.Budget
}

// DefaultLimits are used for zero fields: OpenAI's 25 MB upload cap, and
// 30 minutes of audio.
var DefaultLimits = Limits{MaxBytes: 25 << 20, MaxDuration: 30 * time.Minute, MaxChannels: 32}

// WithDefaults fills zero fields from DefaultLimits.
func (l Limits) WithDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultLimits.MaxBytes
	}
	if l.MaxDuration <= 0 {
		l.MaxDuration = DefaultLimits.MaxDuration
	}
	if l.MaxChannels <= 0 {
		l.MaxChannels = DefaultLimits.MaxChannels
	}
	return l
}

// ErrInvalid is wrapped by every refusal of a file: the client's fault.
var ErrInvalid = errors.New("invalid audio")

// ErrTooLarge is wrapped (with ErrInvalid) when a file is over a limit.
var ErrTooLarge = errors.New("audio over the limit")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Clip is decoded audio.
type Clip struct {
	Samples        []float32 // mono, SampleRate Hz, in [-1, 1]
	SourceRate     int
	SourceChannels int
	SourceFormat   string // e.g. "pcm16", "float32"
	mem            *meter // what the samples hold of Limits.Memory
}

// Duration is how long the clip plays.
func (c Clip) Duration() time.Duration {
	return time.Duration(float64(len(c.Samples)) / SampleRate * float64(time.Second))
}

// container is a kind of file DecodeContext recognises: decoded in Go
// (decode), or by the external decoder with its demuxer forced.
type container struct {
	name    string
	decode  func(context.Context, []byte, Limits, *meter) (Clip, error)
	demuxer string
}

// sniff recognises a file by its first bytes, never by its name.
func sniff(data []byte) (container, bool) {
	at := func(off int, magic string) bool {
		return len(data) >= off+len(magic) && string(data[off:off+len(magic)]) == magic
	}
	switch {
	case at(0, "RIFF") && at(8, "WAVE"):
		return container{name: "WAV", decode: decodeWAV}, true
	case at(0, "fLaC") || at(id3Size(data), "fLaC"):
		return container{name: "FLAC", decode: decodeFLAC}, true
	case at(0, "ID3"):
		return container{name: "MP3", decode: decodeMP3}, true
	case at(0, "OggS"):
		// The first page holds the first packet, which names the codec.
		switch {
		case at(28, "\x01vorbis"):
			return container{name: "Ogg Vorbis", decode: decodeVorbis}, true
		case at(28, "OpusHead"):
			return container{name: "Ogg Opus", demuxer: "ogg"}, true
		}
		return container{name: "Ogg", demuxer: "ogg"}, true
	case at(0, "\x1a\x45\xdf\xa3"):
		return container{name: "WebM/Matroska", demuxer: "matroska"}, true
	case at(4, "ftyp"):
		return container{name: "MP4/M4A", demuxer: "mov"}, true
	case at(0, "FORM") && (at(8, "AIFF") || at(8, "AIFC")):
		return container{name: "AIFF", demuxer: "aiff"}, true
	case len(data) >= 2 && data[0] == 0xff && data[1]&0xf6 == 0xf0:
		return container{name: "AAC (ADTS)", demuxer: "aac"}, true // sync, layer 0
	case len(data) >= 2 && data[0] == 0xff && data[1]&0xe0 == 0xe0 && data[1]&0x06 != 0:
		return container{name: "MP3", decode: decodeMP3}, true // a frame sync, layer I-III
	}
	return container{}, false
}

func unsupported(what string, ext *External) error {
	return invalid("npud cannot decode %s: it decodes %s", what, Supported(ext))
}

const (
	formatPCM        = 1
	formatFloat      = 3
	formatExtensible = 0xfffe
)

type waveFormat struct {
	tag        uint16
	channels   int
	rate       int
	blockAlign int
	bits       int
}

// Decode reads a whole file with the decoders built in (no external
// decoder, no context): DecodeContext(context.Background(), data, l, nil).
func Decode(data []byte, l Limits) (Clip, error) {
	return DecodeContext(context.Background(), data, l, nil)
}

// DecodeContext reads a whole file (already bounded by l.MaxBytes by the
// caller, checked again here) into a 16 kHz mono clip. ext, when not nil,
// decodes what the built-in decoders cannot; it is stopped when ctx ends.
func DecodeContext(ctx context.Context, data []byte, l Limits, ext *External) (Clip, error) {
	l = l.WithDefaults()
	if int64(len(data)) > l.MaxBytes {
		return Clip{}, fmt.Errorf("%w: %w: the file is %d bytes: at most %d are accepted", ErrInvalid, ErrTooLarge, len(data), l.MaxBytes)
	}
	c, ok := sniff(data)
	switch {
	case !ok:
		return Clip{}, unsupported("this file (not a format npud recognises)", ext)
	case c.decode == nil && ext == nil:
		return Clip{}, unsupported(c.name+" without an external decoder", ext)
	}
	mem := &meter{budget: l.Memory}
	var clip Clip
	var err error
	if c.decode != nil {
		clip, err = c.decode(ctx, data, l, mem)
	} else {
		clip, err = decodeExternal(ctx, data, c, l, ext, mem)
	}
	if err != nil {
		mem.release()
		return Clip{}, err
	}
	mem.settle(clip.Samples)
	clip.mem = mem
	return clip, nil
}

func decodeExternal(ctx context.Context, data []byte, c container, l Limits, ext *External, mem *meter) (Clip, error) {
	if c.demuxer == "mov" {
		var err error
		if data, err = moovFirst(data); err != nil {
			return Clip{}, err
		}
	}
	return ext.decode(ctx, data, c.demuxer, c.name, l, mem)
}

func decodeWAV(ctx context.Context, data []byte, l Limits, mem *meter) (Clip, error) {
	var (
		f       *waveFormat
		pcm     []byte
		hasData bool
	)
	for rest := data[12:]; len(rest) >= 8 && !hasData; {
		id := string(rest[0:4])
		size := int64(binary.LittleEndian.Uint32(rest[4:8]))
		body := rest[8:]
		if size > int64(len(body)) {
			if id != "data" {
				return Clip{}, invalid("WAV chunk %q says %d bytes but %d remain: the file is cut", id, size, len(body))
			}
			// Streamed WAVs write 0xFFFFFFFF or a stale size: take what is there.
			size = int64(len(body))
		}
		switch id {
		case "fmt ":
			wf, err := parseFormat(body[:size], l)
			if err != nil {
				return Clip{}, err
			}
			f = &wf
		case "data":
			if f == nil {
				return Clip{}, invalid("WAV data comes before its fmt chunk")
			}
			pcm, hasData = body[:size], true
		}
		next := 8 + size + size%2 // chunks are padded to even length
		if next > int64(len(rest)) {
			break
		}
		rest = rest[next:]
	}
	if f == nil {
		return Clip{}, invalid("WAV has no fmt chunk")
	}
	if !hasData {
		return Clip{}, invalid("WAV has no data chunk")
	}
	frames := len(pcm) / f.blockAlign
	if frames == 0 {
		return Clip{}, invalid("WAV has no samples")
	}
	if d := time.Duration(float64(frames) / float64(f.rate) * float64(time.Second)); d > l.MaxDuration {
		return Clip{}, tooLong(d, l.MaxDuration)
	}
	// A block at a time through the streamed resampler, as the compressed
	// formats go: what is held is the 16 kHz output, counted (mem).
	w, err := newClipWriter(ctx, f.rate, f.channels, f.name(), l, mem)
	if err != nil {
		return Clip{}, err
	}
	if err := w.expect(int64(frames)); err != nil {
		return Clip{}, err
	}
	width, read := f.bits/8, sampleReader(*f)
	const block = 1 << 16 // frames
	for at := 0; at < frames; at += block {
		frame := pcm[at*f.blockAlign:]
		if err := w.add(min(block, frames-at), func(i, ch int) float64 { return read(frame[i*f.blockAlign+ch*width:]) }); err != nil {
			return Clip{}, err
		}
	}
	return w.clip()
}

func (f waveFormat) name() string {
	if f.tag == formatFloat {
		return fmt.Sprintf("float%d", f.bits)
	}
	return fmt.Sprintf("pcm%d", f.bits)
}

func parseFormat(b []byte, l Limits) (waveFormat, error) {
	if len(b) < 16 {
		return waveFormat{}, invalid("WAV fmt chunk is %d bytes, needs 16", len(b))
	}
	f := waveFormat{
		tag:        binary.LittleEndian.Uint16(b[0:2]),
		channels:   int(binary.LittleEndian.Uint16(b[2:4])),
		rate:       int(binary.LittleEndian.Uint32(b[4:8])),
		blockAlign: int(binary.LittleEndian.Uint16(b[12:14])),
		bits:       int(binary.LittleEndian.Uint16(b[14:16])),
	}
	if f.tag == formatExtensible {
		// WAVEFORMATEXTENSIBLE: cbSize(2) validBits(2) channelMask(4), then
		// the sub-format GUID whose first two bytes are the format tag.
		if len(b) < 26 {
			return waveFormat{}, invalid("WAV extensible fmt chunk is %d bytes, needs 26", len(b))
		}
		f.tag = binary.LittleEndian.Uint16(b[24:26])
	}
	switch {
	case f.tag == formatPCM && (f.bits == 8 || f.bits == 16 || f.bits == 24 || f.bits == 32):
	case f.tag == formatFloat && (f.bits == 32 || f.bits == 64):
	case f.tag == formatPCM || f.tag == formatFloat:
		return waveFormat{}, invalid("WAV with %d-bit samples: npud decodes %s", f.bits, Supported(nil))
	default:
		return waveFormat{}, invalid("WAV encoding 0x%04x (compressed, e.g. ADPCM or µ-law): npud decodes %s", f.tag, Supported(nil))
	}
	if f.channels < 1 || f.channels > l.MaxChannels {
		return waveFormat{}, invalid("WAV with %d channels: 1 to %d are accepted", f.channels, l.MaxChannels)
	}
	if f.rate < 1000 || f.rate > 768000 {
		return waveFormat{}, invalid("WAV sample rate %d Hz: 1000 to 768000 are accepted", f.rate)
	}
	if want := f.channels * f.bits / 8; f.blockAlign != want {
		return waveFormat{}, invalid("WAV block align %d does not match %d channels of %d bits (%d)", f.blockAlign, f.channels, f.bits, want)
	}
	return f, nil
}

func sampleReader(f waveFormat) func([]byte) float64 {
	if f.tag == formatFloat {
		if f.bits == 64 {
			return func(b []byte) float64 { return clamp(math.Float64frombits(binary.LittleEndian.Uint64(b))) }
		}
		return func(b []byte) float64 {
			return clamp(float64(math.Float32frombits(binary.LittleEndian.Uint32(b))))
		}
	}
	switch f.bits {
	case 8: // unsigned, 128 is silence
		return func(b []byte) float64 { return (float64(b[0]) - 128) / 128 }
	case 16:
		return func(b []byte) float64 { return float64(int16(binary.LittleEndian.Uint16(b))) / (1 << 15) }
	case 24:
		return func(b []byte) float64 {
			v := int32(uint32(b[0])<<8|uint32(b[1])<<16|uint32(b[2])<<24) >> 8
			return float64(v) / (1 << 23)
		}
	default:
		return func(b []byte) float64 { return float64(int32(binary.LittleEndian.Uint32(b))) / (1 << 31) }
	}
}

// clamp keeps float samples in range; NaN becomes silence.
func clamp(x float64) float64 {
	switch {
	case x != x:
		return 0
	case x > 1:
		return 1
	case x < -1:
		return -1
	}
	return x
}
