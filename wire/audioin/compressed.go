package audioin

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"

	"github.com/hajimehoshi/go-mp3"
	"github.com/jfreymuth/oggvorbis"
	"github.com/mewkiz/flac"
)

// The compressed formats npud decodes itself, with pure-Go decoders: FLAC
// (github.com/mewkiz/flac), MP3 (github.com/hajimehoshi/go-mp3) and Ogg
// Vorbis (github.com/jfreymuth/oggvorbis). Each is bounded the same way:
// the file by MaxBytes before it gets here, the length the header gives
// checked before decoding, the frames decoded counted against
// MaxDuration as they come (a header may lie), and memory by the
// streamed resampler (clipWriter): what stays is the 16 kHz output.

// guard turns a decoder's panic on a malformed file into a refusal.
func guard(format string, err *error) {
	if p := recover(); p != nil {
		*err = invalid("the %s file is malformed (%v)", format, p)
	}
}

func decodeFLAC(ctx context.Context, data []byte, l Limits, mem *meter) (clip Clip, err error) {
	defer guard("FLAC", &err)
	stream, err := flac.New(bytes.NewReader(data))
	if err != nil {
		return Clip{}, invalid("the FLAC file could not be read: %v", err)
	}
	info := stream.Info
	w, err := newClipWriter(ctx, int(info.SampleRate), int(info.NChannels), "flac", l, mem)
	if err != nil {
		return Clip{}, err
	}
	if err := w.expect(int64(min(info.NSamples, 1<<62))); err != nil {
		return Clip{}, err
	}
	for {
		f, err := stream.ParseNext()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Clip{}, invalid("the FLAC file is malformed: %v", err)
		}
		if len(f.Subframes) != w.channels {
			return Clip{}, invalid("a FLAC frame has %d channels, the stream %d", len(f.Subframes), w.channels)
		}
		if int(f.SampleRate) != 0 && int(f.SampleRate) != w.rate {
			return Clip{}, invalid("a FLAC frame is at %d Hz, the stream at %d Hz", f.SampleRate, w.rate)
		}
		bits := f.BitsPerSample
		if bits == 0 {
			bits = info.BitsPerSample
		}
		scale := 1 / float64(int64(1)<<(min(max(bits, 1), 32)-1))
		n := len(f.Subframes[0].Samples)
		for _, s := range f.Subframes[1:] {
			if len(s.Samples) != n {
				return Clip{}, invalid("a FLAC frame's channels differ in length")
			}
		}
		if err := w.add(n, func(i, ch int) float64 { return float64(f.Subframes[ch].Samples[i]) * scale }); err != nil {
			return Clip{}, err
		}
	}
	return w.clip()
}

func decodeMP3(ctx context.Context, data []byte, l Limits, mem *meter) (clip Clip, err error) {
	defer guard("MP3", &err)
	// go-mp3 decodes to 16-bit stereo whatever the file holds (a mono
	// file's channel twice), and with a seekable reader it finds the
	// length by walking the frame headers before decoding any.
	d, err := mp3.NewDecoder(bytes.NewReader(data))
	if err != nil {
		return Clip{}, invalid("the MP3 file could not be read: %v", err)
	}
	w, err := newClipWriter(ctx, d.SampleRate(), 2, "mp3", l, mem)
	if err != nil {
		return Clip{}, err
	}
	if n := d.Length(); n > 0 {
		if err := w.expect(n / 4); err != nil {
			return Clip{}, err
		}
	}
	buf := make([]byte, 4*4096)
	for {
		n, err := io.ReadFull(d, buf)
		frames := n / 4
		if frames > 0 {
			b := buf[:frames*4]
			if aerr := w.add(frames, func(i, ch int) float64 {
				return float64(int16(binary.LittleEndian.Uint16(b[4*i+2*ch:]))) / (1 << 15)
			}); aerr != nil {
				return Clip{}, aerr
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return Clip{}, invalid("the MP3 file is malformed: %v", err)
		}
	}
	return w.clip()
}

func decodeVorbis(ctx context.Context, data []byte, l Limits, mem *meter) (clip Clip, err error) {
	defer guard("Ogg Vorbis", &err)
	r, err := oggvorbis.NewReader(bytes.NewReader(data))
	if err != nil {
		return Clip{}, invalid("the Ogg Vorbis file could not be read: %v", err)
	}
	w, err := newClipWriter(ctx, r.SampleRate(), r.Channels(), "vorbis", l, mem)
	if err != nil {
		return Clip{}, err
	}
	if err := w.expect(r.Length()); err != nil {
		return Clip{}, err
	}
	buf := make([]float32, 4096*w.channels)
	for {
		n, err := r.Read(buf)
		if frames := n / w.channels; frames > 0 {
			b := buf[:frames*w.channels]
			if aerr := w.add(frames, func(i, ch int) float64 { return float64(b[i*w.channels+ch]) }); aerr != nil {
				return Clip{}, aerr
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Clip{}, invalid("the Ogg Vorbis file is malformed: %v", err)
		}
	}
	return w.clip()
}

// id3Size is the length of an ID3v2 tag at the start of data (0 if none):
// MP3 files, and now and then FLAC ones, begin with one.
func id3Size(data []byte) int {
	if len(data) < 10 || string(data[:3]) != "ID3" {
		return 0
	}
	size := int(data[6]&0x7f)<<21 | int(data[7]&0x7f)<<14 | int(data[8]&0x7f)<<7 | int(data[9]&0x7f)
	size += 10
	if data[5]&0x10 != 0 { // a footer
		size += 10
	}
	return size
}
