// Package audiotest makes compressed audio files for tests with Debian's
// sox, lame and ffmpeg (the Makefile's test target installs them), from
// tones made in Go.
package audiotest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/npud/npud/wire/audioin"
	"github.com/npud/npud/wire/audioin/wavtest"
)

// Require skips a test when tool is not installed, and fails it under CI,
// where make test has installed it.
func Require(t testing.TB, tool string) string {
	t.Helper()
	path, err := exec.LookPath(tool)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing: make test installs it", tool)
		}
		t.Skipf("%s is not installed (make test installs it)", tool)
	}
	return path
}

// Formats are the files Encode makes.
var Formats = []string{"flac", "mp3", "ogg-vorbis", "ogg-opus", "webm", "m4a", "m4a-moov-last", "aiff"}

// Encode writes channels (at rate) as a WAV and converts it to format:
// flac (sox), mp3 (lame), ogg-vorbis, ogg-opus, webm (Opus), m4a (AAC,
// the index first), m4a-moov-last (the index after the audio, as
// ffmpeg and many recorders write it) or aiff (ffmpeg).
func Encode(t testing.TB, format string, channels [][]float64, rate int) []byte {
	t.Helper()
	wav := filepath.Join(t.TempDir(), "in.wav")
	if err := os.WriteFile(wav, wavtest.Encode(channels, rate, wavtest.PCM16), 0o600); err != nil {
		t.Fatal(err)
	}
	return Convert(t, format, wav)
}

// Convert turns the WAV file at wav (espeak-ng's speech, say) into format,
// as Encode does.
func Convert(t testing.TB, format, wav string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	var cmd []string
	ff := func(args ...string) []string {
		return append([]string{"ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-i", wav}, args...)
	}
	switch format {
	case "flac":
		cmd = []string{"sox", wav, "-t", "flac", out}
	case "mp3":
		cmd = []string{"lame", "--quiet", "-b", "128", wav, out}
	case "ogg-vorbis":
		cmd = ff("-c:a", "libvorbis", "-f", "ogg", out)
	case "ogg-opus":
		cmd = ff("-c:a", "libopus", "-f", "ogg", out)
	case "webm":
		cmd = ff("-c:a", "libopus", "-f", "webm", out)
	case "m4a":
		cmd = ff("-c:a", "aac", "-movflags", "+faststart", "-f", "ipod", out)
	case "m4a-moov-last":
		cmd = ff("-c:a", "aac", "-f", "ipod", out)
	case "aiff":
		cmd = ff("-f", "aiff", out)
	default:
		t.Fatalf("audiotest: no format %q", format)
	}
	Require(t, cmd[0])
	if b, err := exec.CommandContext(t.Context(), cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd, err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Tone is a sine of freq Hz and peak amp, seconds long, on every one of
// channels, as format.
func Tone(t testing.TB, format string, freq, amp, seconds float64, rate, channels int) []byte {
	t.Helper()
	tone := wavtest.Tone(freq, amp, seconds, rate)
	chans := make([][]float64, channels)
	for i := range chans {
		chans[i] = tone
	}
	return Encode(t, format, chans, rate)
}

// LeftOnly is a stereo file with the tone on the left and silence on the
// right.
func LeftOnly(t testing.TB, format string, freq, amp, seconds float64, rate int) []byte {
	t.Helper()
	tone := wavtest.Tone(freq, amp, seconds, rate)
	return Encode(t, format, [][]float64{tone, make([]float64, len(tone))}, rate)
}

// Speech writes a WAV of speech made by Debian's espeak-ng (22.05 kHz,
// 16-bit mono: a real file from another program) and returns its path.
func Speech(t testing.TB) string {
	t.Helper()
	espeak := Require(t, "espeak-ng")
	path := filepath.Join(t.TempDir(), "speech.wav")
	out, err := exec.CommandContext(t.Context(), espeak, "-w", path, "The NPU transcribes speech on this machine.").CombinedOutput()
	if err != nil {
		t.Fatalf("espeak-ng: %v: %s", err, out)
	}
	return path
}

// HeardWords reads what the simulated engine and the test library's
// Whisper say they heard in a window: "2.50 seconds, level 0.354, pitch
// 440 Hz." (or "…, silence.").
var HeardWords = regexp.MustCompile(`([0-9.]+) seconds, (?:level ([0-9.]+)|silence)(?:, pitch ([0-9]+) Hz)?\.`)

// Heard is one window's length in seconds, RMS level and a tone's pitch.
type Heard struct{ Seconds, Level, Pitch float64 }

// ParseHeard reads the first window text says it heard.
func ParseHeard(t testing.TB, text string) Heard {
	t.Helper()
	m := HeardWords.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no window heard in the transcript %q", text)
	}
	var h Heard
	h.Seconds, _ = strconv.ParseFloat(m[1], 64)
	h.Level, _ = strconv.ParseFloat(m[2], 64)
	h.Pitch, _ = strconv.ParseFloat(m[3], 64)
	return h
}

// SpeechClip is Speech's file and the clip npud decodes from it.
func SpeechClip(t testing.TB) (string, audioin.Clip) {
	t.Helper()
	path := Speech(t)
	wav, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	clip, err := audioin.Decode(wav, audioin.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return path, clip
}
