// Package wavtest makes WAV files for tests: tones and silence in any of
// the encodings audioin decodes.
package wavtest

import (
	"bytes"
	"encoding/binary"
	"math"
)

// Encoding is how samples are stored.
type Encoding struct {
	Float      bool
	Bits       int
	Extensible bool // WAVE_FORMAT_EXTENSIBLE header
}

var (
	PCM8    = Encoding{Bits: 8}
	PCM16   = Encoding{Bits: 16}
	PCM24   = Encoding{Bits: 24}
	PCM32   = Encoding{Bits: 32}
	Float32 = Encoding{Float: true, Bits: 32}
	Float64 = Encoding{Float: true, Bits: 64}
)

// Tone is seconds of a sine at freq Hz and peak amplitude amp, at rate.
func Tone(freq, amp, seconds float64, rate int) []float64 {
	n := int(seconds * float64(rate))
	x := make([]float64, n)
	for i := range x {
		x[i] = amp * math.Sin(2*math.Pi*freq*float64(i)/float64(rate))
	}
	return x
}

// Encode writes channels (each the same length) as a WAV file.
func Encode(channels [][]float64, rate int, enc Encoding) []byte {
	nch := len(channels)
	width := enc.Bits / 8
	frames := len(channels[0])
	var data bytes.Buffer
	for i := range frames {
		for _, ch := range channels {
			writeSample(&data, ch[i], enc)
		}
	}
	tag := uint16(1)
	if enc.Float {
		tag = 3
	}
	var fmtChunk bytes.Buffer
	le := binary.LittleEndian
	headerTag := tag
	if enc.Extensible {
		headerTag = 0xfffe
	}
	_ = binary.Write(&fmtChunk, le, headerTag)
	_ = binary.Write(&fmtChunk, le, uint16(nch))
	_ = binary.Write(&fmtChunk, le, uint32(rate))
	_ = binary.Write(&fmtChunk, le, uint32(rate*nch*width))
	_ = binary.Write(&fmtChunk, le, uint16(nch*width))
	_ = binary.Write(&fmtChunk, le, uint16(enc.Bits))
	if enc.Extensible {
		_ = binary.Write(&fmtChunk, le, uint16(22))
		_ = binary.Write(&fmtChunk, le, uint16(enc.Bits))
		_ = binary.Write(&fmtChunk, le, uint32(0))
		_ = binary.Write(&fmtChunk, le, tag)
		fmtChunk.Write([]byte{0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71})
	}
	var out bytes.Buffer
	out.WriteString("RIFF")
	_ = binary.Write(&out, le, uint32(4+8+fmtChunk.Len()+8+data.Len()+8+4))
	out.WriteString("WAVE")
	// An unknown chunk first: decoders must skip what they do not read.
	out.WriteString("LIST")
	_ = binary.Write(&out, le, uint32(4))
	out.WriteString("INFO")
	out.WriteString("fmt ")
	_ = binary.Write(&out, le, uint32(fmtChunk.Len()))
	out.Write(fmtChunk.Bytes())
	out.WriteString("data")
	_ = binary.Write(&out, le, uint32(data.Len()))
	out.Write(data.Bytes())
	return out.Bytes()
}

func writeSample(b *bytes.Buffer, x float64, enc Encoding) {
	le := binary.LittleEndian
	x = math.Max(-1, math.Min(1, x))
	switch {
	case enc.Float && enc.Bits == 64:
		_ = binary.Write(b, le, x)
	case enc.Float:
		_ = binary.Write(b, le, float32(x))
	case enc.Bits == 8:
		b.WriteByte(byte(math.Round(x*127 + 128)))
	case enc.Bits == 16:
		_ = binary.Write(b, le, int16(math.Round(x*32767)))
	case enc.Bits == 24:
		v := int32(math.Round(x * 8388607))
		b.Write([]byte{byte(v), byte(v >> 8), byte(v >> 16)})
	default:
		_ = binary.Write(b, le, int32(math.Round(x*2147483647)))
	}
}
