package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/cli"
	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/wire/audioin/wavtest"
)

// writeFile writes data into the test's folder and returns its path.
func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}

// Issue 30 item 7: npud transcribe sends a WAV file to a real daemon (the
// simulated engine hears a tone's length, level and pitch, so the file
// arrives whole and decodes) and prints the answer in each format.
func TestTranscribeCommand(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	tone := wavtest.Tone(440, 0.5, 2.5, 44100)
	wav := writeFile(t, "tone.wav", wavtest.Encode([][]float64{tone, tone}, 44100, wavtest.PCM16))
	host := "--host=" + srv.URL
	heard := `2\.50 seconds, level 0\.35\d, pitch 4[34]\d Hz\.`

	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, out string)
	}{
		{"text, the speech model found by its capability", []string{wav, host}, func(t *testing.T, out string) {
			assert.Regexp(t, `^`+heard+`\n$`, out)
		}},
		{"flags before the file", []string{host, "--model", "sim", wav}, func(t *testing.T, out string) {
			assert.Regexp(t, `^`+heard+`\n$`, out)
		}},
		{"srt", []string{wav, host, "--format", "srt"}, func(t *testing.T, out string) {
			assert.Regexp(t, `^1\n00:00:00,000 --> 00:00:02,500\n`+heard+`\n`, out)
		}},
		{"vtt", []string{wav, host, "--format", "vtt"}, func(t *testing.T, out string) {
			assert.Regexp(t, `^WEBVTT\n\n00:00:00\.000 --> 00:00:02\.500\n`+heard+`\n`, out)
		}},
		{"json", []string{wav, host, "--format", "json"}, func(t *testing.T, out string) {
			var v struct{ Text string }
			require.NoError(t, json.Unmarshal([]byte(out), &v), out)
			assert.Regexp(t, `^`+heard+`$`, v.Text)
		}},
		{"verbose_json with a language", []string{wav, host, "--format", "verbose_json", "--language", "de"}, func(t *testing.T, out string) {
			var v struct {
				Task, Language string
				Segments       []struct{ Start, End float64 }
			}
			require.NoError(t, json.Unmarshal([]byte(out), &v), out)
			assert.Equal(t, "transcribe", v.Task)
			assert.Equal(t, "de", v.Language)
			require.Len(t, v.Segments, 1)
			assert.InDelta(t, 2.5, v.Segments[0].End, 0.01)
		}},
		{"translate", []string{wav, host, "--translate", "--format", "verbose_json"}, func(t *testing.T, out string) {
			var v struct{ Task, Text string }
			require.NoError(t, json.Unmarshal([]byte(out), &v), out)
			assert.Equal(t, "translate", v.Task)
			assert.Regexp(t, `^Translated: `+heard+`$`, v.Text)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := npud(t, "", append([]string{"transcribe"}, tc.args...)...)
			require.Equal(t, 0, code, errOut)
			assert.Empty(t, errOut)
			tc.check(t, out)
		})
	}
}

// Every way a transcription can fail says what went wrong, with no
// transcript on stdout.
func TestTranscribeErrors(t *testing.T) {
	const key = "k-transcribe-0123456789abcdef"
	srv := daemontest.StartSim(t, func(c *daemon.Config) { c.APIKeys = []daemon.APIKey{{Name: "dev", Key: key}} }, nil)
	wav := writeFile(t, "tone.wav", wavtest.Encode([][]float64{wavtest.Tone(440, 0.5, 1, 16000)}, 16000, wavtest.PCM16))
	notAudio := writeFile(t, "notes.txt", []byte("these are not samples"))
	host := "--host=" + srv.URL
	withKey := func(k string) string {
		if k == "NPUD_API_KEY" {
			return key
		}
		return ""
	}

	var out, errOut strings.Builder
	code := cliMain(t, withKey, []string{"transcribe", wav, host, "--model", "sim"}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	assert.Contains(t, out.String(), "1.00 seconds", "the key from NPUD_API_KEY")

	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no key", []string{wav, host, "--model", "sim"}, 1, "API key"},
		{"no file", []string{filepath.Join(t.TempDir(), "missing.wav"), host}, 1, "missing.wav: no such file"},
		{"a folder", []string{t.TempDir(), host}, 1, "is a folder, not an audio file"},
		{"no file named", []string{host}, 2, "usage: npud transcribe"},
		{"two files", []string{wav, host, wav}, 2, "usage: npud transcribe"},
		{"a bad format", []string{wav, host, "--format", "mp3"}, 2, `--format "mp3": want one of text, json, srt, vtt, verbose_json`},
		{"a language with --translate", []string{wav, host, "--translate", "--language", "de"}, 2, "Whisper translates into English"},
		{"no daemon", []string{wav, "--host=127.0.0.1:1", "--model", "sim"}, 1, "no npud answers at http://127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := npud(t, "", append([]string{"transcribe"}, tc.args...)...)
			assert.Equal(t, tc.code, code, errOut)
			assert.Contains(t, errOut, tc.stderr)
			assert.Empty(t, out)
		})
	}
	// What the daemon refuses, in its words.
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"not audio", []string{notAudio, host, "--model", "sim"}, "WAV"},
		{"an unknown model", []string{wav, host, "--model", "no-such-model"}, "no-such-model"},
		{"a bad language", []string{wav, host, "--model", "sim", "--language", "english"}, "ISO-639-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut strings.Builder
			code := cliMain(t, withKey, append([]string{"transcribe"}, tc.args...), &out, &errOut)
			assert.Equal(t, 1, code, errOut.String())
			assert.Contains(t, errOut.String(), "npud transcribe: ")
			assert.Contains(t, errOut.String(), tc.stderr)
			assert.Empty(t, out.String())
		})
	}
}

// cliMain runs an npud command in-process with the environment given.
func cliMain(t *testing.T, getenv func(string) string, args []string, stdout, stderr *strings.Builder) int {
	t.Helper()
	return cli.MainIO(t.Context(), args, getenv, strings.NewReader(""), stdout, stderr)
}
