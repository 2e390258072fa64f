package audioin

import (
	"math"
)

// The resampler is a windowed-sinc interpolator (band-limited
// interpolation): each output sample is the input convolved with a
// low-pass sinc, cut at the lower of the two Nyquist frequencies, under a
// Blackman window. Downsampling without it (dropping or averaging samples)
// folds everything above 8 kHz back into the band Whisper hears.
const (
	zeroCrossings = 10   // of the sinc on each side: the kernel's half width
	tableSteps    = 512  // kernel values per zero crossing, linearly interpolated
	rolloff       = 0.94 // the cutoff, as a fraction of the lower Nyquist frequency
)

// kernel is the windowed sinc from 0 to zeroCrossings (it is symmetric),
// in units of zero crossings.
type kernel []float64

func newKernel() kernel {
	k := make(kernel, zeroCrossings*tableSteps+2)
	for i := range k {
		u := float64(i) / tableSteps
		if u > zeroCrossings {
			k[i] = 0
			continue
		}
		s := 1.0
		if u != 0 {
			s = math.Sin(math.Pi*u) / (math.Pi * u)
		}
		// Blackman over [-zeroCrossings, zeroCrossings], centred on 0.
		w := 0.42 + 0.5*math.Cos(math.Pi*u/zeroCrossings) + 0.08*math.Cos(2*math.Pi*u/zeroCrossings)
		k[i] = s * w
	}
	return k
}

func (k kernel) at(u float64) float64 {
	u = math.Abs(u) * tableSteps
	i := int(u)
	if i+1 >= len(k) {
		return 0
	}
	f := u - float64(i)
	return k[i] + f*(k[i+1]-k[i])
}

// Resample converts x from rate in to rate out (both in Hz).
func Resample(x []float32, in, out int) []float32 {
	if in == out || len(x) == 0 {
		return x
	}
	k := newKernel()
	// Cutoff in cycles per input sample; the sinc's zero crossings are
	// 1/(2·cutoff) input samples apart.
	cutoff := 0.5 * rolloff * math.Min(1, float64(out)/float64(in))
	scale := 2 * cutoff // zero crossings per input sample
	half := zeroCrossings / scale
	n := int((int64(len(x))*int64(out) + int64(in) - 1) / int64(in))
	y := make([]float32, n)
	if phases := newPolyphase(k, in, out, scale, half); phases != nil {
		phases.run(x, y, in, out)
		return y
	}
	for i := range y {
		// The output sample's position in input samples, exactly.
		num := int64(i) * int64(in)
		t := float64(num/int64(out)) + float64(num%int64(out))/float64(out)
		lo := max(int(math.Ceil(t-half)), 0)
		hi := min(int(math.Floor(t+half)), len(x)-1)
		var sum, wsum float64
		for j := lo; j <= hi; j++ {
			w := k.at((t - float64(j)) * scale)
			sum += float64(x[j]) * w
			wsum += w
		}
		if wsum != 0 {
			// Normalising by the weights keeps a constant constant, also
			// at the clip's ends where the kernel is cut.
			y[i] = float32(clamp(sum / wsum))
		}
	}
	return y
}

// polyphase holds the kernel's weights for each of the fractional
// positions an output sample can fall on, when the two rates have few of
// them (in/out reduced to L output phases: 1 for 48 kHz → 16 kHz, 160 for
// 44.1 kHz → 16 kHz), so the inner loop is a plain dot product.
type polyphase struct {
	reach   int         // taps before the output's input position
	weights [][]float64 // [phase][tap], normalised to sum 1
}

// maxPhases bounds the table (odd rates such as 44 099 Hz have thousands
// of phases; they take the direct path).
const maxPhases = 1024

func newPolyphase(k kernel, in, out int, scale, half float64) *polyphase {
	g := gcd(in, out)
	phases := out / g
	if phases > maxPhases {
		return nil
	}
	reach := int(math.Ceil(half))
	taps := 2*reach + 2
	p := &polyphase{reach: reach, weights: make([][]float64, phases)}
	for q := range phases {
		frac := float64(q*g) / float64(out) // the output's position past its input sample
		w := make([]float64, taps)
		var sum float64
		for t := range w {
			w[t] = k.at((frac + float64(reach-t)) * scale)
			sum += w[t]
		}
		for t := range w {
			w[t] /= sum
		}
		p.weights[q] = w
	}
	return p
}

func (p *polyphase) run(x, y []float32, in, out int) {
	g := int64(gcd(in, out))
	for i := range y {
		num := int64(i) * int64(in)
		base := int(num / int64(out))
		w := p.weights[(num%int64(out))/g]
		lo := base - p.reach
		if lo < 0 || lo+len(w) > len(x) {
			y[i] = edge(x, w, lo) // the clip's ends: renormalise what is there
			continue
		}
		var sum float64
		for t, v := range x[lo : lo+len(w)] {
			sum += float64(v) * w[t]
		}
		// A full-scale step rings past ±1 through any band-limited
		// filter: clamped, as Clip promises.
		y[i] = float32(clamp(sum))
	}
}

func edge(x []float32, w []float64, lo int) float32 {
	var sum, wsum float64
	for t, wt := range w {
		if j := lo + t; j >= 0 && j < len(x) {
			sum += float64(x[j]) * wt
			wsum += wt
		}
	}
	if wsum == 0 {
		return 0
	}
	return float32(clamp(sum / wsum))
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
