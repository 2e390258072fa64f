// Package audioin turns the audio files clients upload into what a speech
// model takes: 16 kHz mono float32 samples in [-1, 1], the input GenAI's
// Whisper pipeline expects (openvino.genai
// src/c/include/openvino/genai/c/whisper_pipeline.h: "raw speech ... 16 kHz"
// float array; src/cpp/src/whisper/feature_extractor.cpp works at 16000 Hz),
// within bounds on the file's size and its duration.
//
// It decodes WAV (RIFF/WAVE: integer PCM of 8, 16, 24 or 32 bits, IEEE
// float of 32 or 64 bits, WAVE_FORMAT_EXTENSIBLE of either, any sample rate
// and any number of channels). Channels are averaged; the rate is changed
// with a windowed-sinc resampler (resample.go). Other containers (mp3, flac,
// ogg, webm, m4a) are recognised and refused with a message that lists what
// is decoded.
package audioin

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// SampleRate is the rate of every decoded clip: Whisper's.
const SampleRate = 16000

// Supported says what Decode reads, for error messages and docs.
const Supported = "WAV (RIFF/WAVE: 8/16/24/32-bit integer PCM or 32/64-bit float, any sample rate, any channel count)"

// Limits bound one upload.
type Limits struct {
	MaxBytes    int64         // the file as sent
	MaxDuration time.Duration // the audio it holds
	MaxChannels int
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
}

// Duration is how long the clip plays.
func (c Clip) Duration() time.Duration {
	return time.Duration(float64(len(c.Samples)) / SampleRate * float64(time.Second))
}

// magic names containers npud recognises but does not decode, so the
// refusal can say what the client sent.
var magic = []struct {
	name   string
	prefix []byte
	offset int
}{
	{"FLAC", []byte("fLaC"), 0},
	{"Ogg (Vorbis/Opus)", []byte("OggS"), 0},
	{"MP3", []byte("ID3"), 0},
	{"WebM/Matroska", []byte{0x1a, 0x45, 0xdf, 0xa3}, 0},
	{"MP4/M4A", []byte("ftyp"), 4},
	{"AIFF", []byte("FORM"), 0},
}

func unsupported(data []byte) error {
	what := "this file"
	for _, m := range magic {
		if len(data) >= m.offset+len(m.prefix) && bytes.Equal(data[m.offset:m.offset+len(m.prefix)], m.prefix) {
			what = m.name
			break
		}
	}
	if what == "this file" && len(data) >= 2 && data[0] == 0xff && data[1]&0xe0 == 0xe0 {
		what = "MP3"
	}
	return invalid("npud cannot decode %s: it decodes %s; other formats are not supported yet (convert first, e.g. ffmpeg -i in -ar 16000 -ac 1 out.wav)", what, Supported)
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

// Decode reads a whole file (already bounded by l.MaxBytes by the caller,
// checked again here) into a 16 kHz mono clip.
func Decode(data []byte, l Limits) (Clip, error) {
	l = l.WithDefaults()
	if int64(len(data)) > l.MaxBytes {
		return Clip{}, fmt.Errorf("%w: %w: the file is %d bytes: at most %d are accepted", ErrInvalid, ErrTooLarge, len(data), l.MaxBytes)
	}
	if len(data) < 12 || string(data[0:4]) != "RIFF" || string(data[8:12]) != "WAVE" {
		return Clip{}, unsupported(data)
	}
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
		return Clip{}, fmt.Errorf("%w: %w: the audio is %s long: at most %s is accepted", ErrInvalid, ErrTooLarge, d.Round(time.Millisecond), l.MaxDuration)
	}
	mono := mixDown(pcm[:frames*f.blockAlign], *f, frames)
	return Clip{Samples: Resample(mono, f.rate, SampleRate), SourceRate: f.rate, SourceChannels: f.channels, SourceFormat: f.name()}, nil
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
		return waveFormat{}, invalid("WAV with %d-bit samples: npud decodes %s", f.bits, Supported)
	default:
		return waveFormat{}, invalid("WAV encoding 0x%04x (compressed, e.g. ADPCM or µ-law): npud decodes %s", f.tag, Supported)
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

// mixDown averages the channels of each frame into one float in [-1, 1].
func mixDown(pcm []byte, f waveFormat, frames int) []float32 {
	out := make([]float32, frames)
	width := f.bits / 8
	read := sampleReader(f)
	inv := 1 / float64(f.channels)
	for i := range frames {
		frame := pcm[i*f.blockAlign:]
		var sum float64
		for ch := range f.channels {
			sum += read(frame[ch*width:])
		}
		out[i] = float32(sum * inv)
	}
	return out
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
