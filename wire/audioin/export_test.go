package audioin

// ResampleStreamed feeds x to the streamed resampler in pieces of the
// sizes piece gives, for tests that compare it with Resample.
func ResampleStreamed(x []float32, rate int, piece func() int) []float32 {
	r := newStreamResampler(rate, SampleRate)
	for len(x) > 0 {
		n := min(piece(), len(x))
		r.write(x[:n])
		x = x[n:]
	}
	return r.finish()
}

// MoovFirst is moovFirst, for the fuzzer.
func MoovFirst(data []byte) ([]byte, error) { return moovFirst(data) }
