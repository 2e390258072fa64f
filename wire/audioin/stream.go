package audioin

import (
	"context"
	"fmt"
	"math"
	"time"
)

// streamResampler changes the rate of audio that arrives in pieces,
// holding only a block of input at a time, so a long compressed file
// costs the memory of its 16 kHz output and not of its decoded source.
// Blocks start at input positions that fall exactly on output samples,
// and each is resampled with enough input on both sides for the
// kernel's reach, so the output is the same, sample for sample, as
// Resample's over the whole clip.
type streamResampler struct {
	in, out  int
	step     int // input samples that make a whole number of output samples
	pad      int // context kept on each side of a block, a multiple of step
	block    int // input samples resampled at a time, a multiple of step
	buf      []float32
	bufStart int64 // the input index of buf[0], a multiple of step
	next     int64 // the input index of the next block, a multiple of step
	y        []float32
}

func newStreamResampler(in, out int) *streamResampler {
	g := gcd(in, out)
	step := in / g
	cutoff := 0.5 * rolloff * math.Min(1, float64(out)/float64(in))
	reach := int(math.Ceil(zeroCrossings/(2*cutoff))) + 2
	align := func(n int) int { return (n + step - 1) / step * step }
	return &streamResampler{in: in, out: out, step: step, pad: align(reach), block: align(10 * in)}
}

// write takes more input.
func (r *streamResampler) write(x []float32) {
	if r.in == r.out {
		r.y = append(r.y, x...)
		return
	}
	r.buf = append(r.buf, x...)
	for r.bufStart+int64(len(r.buf)) >= r.next+int64(r.block+r.pad) {
		end := r.next + int64(r.block+r.pad) - r.bufStart
		y := Resample(r.buf[:end], r.in, r.out)
		from := (r.next - r.bufStart) * int64(r.out) / int64(r.in)
		to := (r.next + int64(r.block) - r.bufStart) * int64(r.out) / int64(r.in)
		r.y = append(r.y, y[from:to]...)
		r.next += int64(r.block)
		// Keep the context the next block needs, and nothing before it.
		keep := r.next - int64(r.pad) - r.bufStart
		n := copy(r.buf, r.buf[keep:])
		r.buf = r.buf[:n]
		r.bufStart += keep
	}
}

// finish resamples what is left and returns the whole output.
func (r *streamResampler) finish() []float32 {
	if r.in == r.out || len(r.buf) == 0 {
		return r.y
	}
	y := Resample(r.buf, r.in, r.out)
	from := (r.next - r.bufStart) * int64(r.out) / int64(r.in)
	if from < int64(len(y)) {
		r.y = append(r.y, y[from:]...)
	}
	r.buf = nil
	return r.y
}

// clipWriter gathers decoded audio into a Clip: each piece mixed down to
// mono, counted against the duration limit as it comes (a compressed
// file's header may lie about its length), and resampled a block at a
// time.
type clipWriter struct {
	ctx            context.Context // the request: a client that left stops the decode
	rate, channels int
	format         string
	maxFrames      int64
	maxDuration    time.Duration
	frames         int64
	rs             *streamResampler
	mono           []float32
	mem            *meter
}

func newClipWriter(ctx context.Context, rate, channels int, format string, l Limits, mem *meter) (*clipWriter, error) {
	if channels < 1 || channels > l.MaxChannels {
		return nil, invalid("%s with %d channels: 1 to %d are accepted", format, channels, l.MaxChannels)
	}
	if rate < 1000 || rate > 768000 {
		return nil, invalid("%s sample rate %d Hz: 1000 to 768000 are accepted", format, rate)
	}
	return &clipWriter{ctx: ctx, rate: rate, channels: channels, format: format, maxDuration: l.MaxDuration,
		maxFrames: int64(l.MaxDuration.Seconds() * float64(rate)), rs: newStreamResampler(rate, SampleRate), mem: mem}, nil
}

// checkFrames refuses a length over the limit, from a header or counted.
func (w *clipWriter) checkFrames(frames int64) error {
	if frames > w.maxFrames {
		d := time.Duration(float64(frames) / float64(w.rate) * float64(time.Second))
		return tooLong(d, w.maxDuration)
	}
	return nil
}

// expect checks the length a header gives and, when it gives one, reserves
// and allocates the output it decodes to at once: of two long uploads
// decoded together one gets the memory and the other a 503 before either
// has decoded anything (counted only as it grew, both could run out half
// way). A header that claims less grows the output as it comes; one that
// claims more is trimmed when the decode ends (clip).
func (w *clipWriter) expect(frames int64) error {
	if err := w.checkFrames(frames); err != nil || frames <= 0 {
		return err
	}
	out := int(frames*int64(w.rs.out)/int64(w.rs.in)) + (w.rs.block+w.rs.pad)*w.rs.out/w.rs.in + 2
	y, err := w.mem.room(w.rs.y, out, w.buffers())
	if err != nil {
		return err
	}
	w.rs.y = y
	return nil
}

// buffers is what the decode holds besides its output: the piece being
// mixed down and the resampler's block of source samples.
func (w *clipWriter) buffers() int64 { return 4 * int64(cap(w.mono)+w.rs.block+3*w.rs.pad) }

func tooLong(d, limit time.Duration) error {
	return fmt.Errorf("%w: %w: the audio is %s long: at most %s is accepted", ErrInvalid, ErrTooLarge, d.Round(time.Millisecond), limit)
}

// add mixes frames frames down, reading sample (frame, channel) through
// at, in [-1, 1].
func (w *clipWriter) add(frames int, at func(frame, channel int) float64) error {
	if w.ctx.Err() != nil {
		return context.Cause(w.ctx)
	}
	w.frames += int64(frames)
	if err := w.checkFrames(w.frames); err != nil {
		return err
	}
	w.mono = w.mono[:0]
	inv := 1 / float64(w.channels)
	for i := range frames {
		var sum float64
		for ch := range w.channels {
			sum += at(i, ch)
		}
		w.mono = append(w.mono, float32(clamp(sum*inv)))
	}
	// The output grows here, if anywhere: by at most a block's worth
	// more than this piece, reserved before it is allocated.
	out := len(w.mono)
	if w.rs.in != w.rs.out {
		out = (len(w.mono)+w.rs.block+w.rs.pad)*w.rs.out/w.rs.in + 2
	}
	y, err := w.mem.room(w.rs.y, out, w.buffers())
	if err != nil {
		return err
	}
	w.rs.y = y
	w.rs.write(w.mono)
	return nil
}

func (w *clipWriter) clip() (Clip, error) {
	if w.frames == 0 {
		return Clip{}, invalid("the %s file has no samples", w.format)
	}
	y := w.rs.finish()
	if spare := cap(y) - len(y); spare > len(y)/4 && spare > 1<<16 && w.mem.more(4*int64(len(y))) == nil {
		// The header claimed more than the file held: keep only the clip.
		y = append(make([]float32, 0, len(y)), y...)
	}
	return Clip{Samples: y, SourceRate: w.rate, SourceChannels: w.channels, SourceFormat: w.format}, nil
}
