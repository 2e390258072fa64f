//go:build cgo

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu/modelstore"
	"github.com/npud/npud/npu/openvino/ovtestlib"
	"github.com/npud/npud/systemd"
)

// writeSpeechModel makes a Whisper model folder (modelstore's speech
// files), less the ones named in without.
func writeSpeechModel(t *testing.T, models, name string, without ...string) {
	t.Helper()
	dir := filepath.Join(models, name)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, f := range modelstore.SpeechModelFiles {
		if slices.Contains(without, f.Name) {
			continue
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, f.Name), []byte("x"), 0o644))
	}
}

func runDoctor(t *testing.T, getenv func(string) string, args ...string) (int, doctorReport, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), append([]string{"doctor", "--json"}, args...), getenv, &stdout, &stderr)
	var r doctorReport
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &r), "stdout: %s stderr: %s", stdout.String(), stderr.String())
	var text bytes.Buffer
	Main(context.Background(), append([]string{"doctor"}, args...), getenv, &text, io.Discard)
	return code, r, text.String()
}

func check(r doctorReport, name string) doctorCheck {
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	return doctorCheck{}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// Issue 14: npud doctor explains every missing piece, with its fix, and
// exits 0 only when a real engine is ready.
func TestDoctor(t *testing.T) {
	lib := ovtestlib.Require(t, ovtestlib.Current)
	old := ovtestlib.Require(t, ovtestlib.WithoutGetString)
	t.Setenv("OVTEST_DEVICES", "CPU,NPU")
	withModel := t.TempDir()
	ovtestlib.WriteModel(t, withModel, "qwen-int4-ov")
	noDetokenizer := t.TempDir()
	ovtestlib.WriteModel(t, noDetokenizer, "broken", "openvino_detokenizer.xml")
	noTemplate := t.TempDir()
	ovtestlib.WriteModel(t, noTemplate, "base", "tokenizer_config.json")
	emptyModels := t.TempDir()
	whisper := t.TempDir()
	writeSpeechModel(t, whisper, "whisper-tiny-fp16-ov")
	whisperNoConfig := t.TempDir()
	writeSpeechModel(t, whisperNoConfig, "whisper-base-ov", "generation_config.json")
	embedding := t.TempDir()
	ovtestlib.WriteEmbeddingModel(t, embedding, "bge-small", 512)
	embeddingMaxPooling := t.TempDir()
	ovtestlib.WriteEmbeddingModel(t, embeddingMaxPooling, "odd", 512)
	require.NoError(t, os.WriteFile(filepath.Join(embeddingMaxPooling, "odd", "1_Pooling", "config.json"), []byte(`{"pooling_mode_max_tokens": true}`), 0o644))
	rerank := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(rerank, "tinyrerank"), os.DirFS(filepath.Join("..", "testdata", "openvino", "tinyrerank", "model"))))
	noEnv := env("INTEL_OPENVINO_DIR", t.TempDir())
	common := func(models string) []string {
		return []string{"--models-dir", models, "--cache-dir", filepath.Join(t.TempDir(), "cache"), "--listen", freeAddr(t)}
	}

	for _, tc := range []struct {
		name      string
		args      []string
		setenv    map[string]string
		wantCode  int
		check     string
		status    string
		detailHas string
		fixHas    string
	}{
		{"ready", append([]string{"--openvino-lib", lib}, common(withModel)...), nil, 0, "model qwen-int4-ov", checkOK, "chat template present", ""},
		{"no library", common(withModel), nil, 1, "openvino library", checkFail, "not found", "docs/OPENVINO.md"},
		{"a library that lacks a symbol", append([]string{"--openvino-lib", old}, common(withModel)...), nil, 1,
			"openvino library", checkFail, "ov_genai_decoded_results_get_string", "upgrade OpenVINO GenAI to 2026.2"},
		{"an old version", append([]string{"--openvino-lib", lib}, common(withModel)...), map[string]string{"OVTEST_VERSION": "2025.4.1-1-x"}, 1,
			"openvino library", checkFail, "2025.4", "upgrade OpenVINO GenAI to 2026.2"},
		{"no models", append([]string{"--openvino-lib", lib}, common(emptyModels)...), nil, 1, "models folder", checkFail, "no complete model", "npud pull"},
		{"models folder missing", append([]string{"--openvino-lib", lib}, common(filepath.Join(emptyModels, "nope"))...), nil, 1,
			"models folder", checkFail, "does not exist", "npud pull"},
		{"a model without its detokenizer", append([]string{"--openvino-lib", lib}, common(noDetokenizer)...), nil, 1,
			"model broken", checkFail, "openvino_detokenizer.xml", "optimum-cli"},
		{"a model without a chat template", append([]string{"--openvino-lib", lib}, common(noTemplate)...), nil, 0,
			"model base", checkWarn, "no chat template", "instruct"},
		// Issue 30: a Whisper export is a model of its own kind, not a
		// chat model missing openvino_model.xml.
		{"a speech model", append([]string{"--openvino-lib", lib}, common(whisper)...), nil, 0,
			"model whisper-tiny-fp16-ov", checkOK, "speech (Whisper) model", ""},
		// Issue 40: an embedding model needs no detokenizer or chat
		// template, and a pooling npud follows.
		{"an embedding model", append([]string{"--openvino-lib", lib}, common(embedding)...), nil, 0,
			"model bge-small", checkOK, "an embedding model: IR, weights and tokenizer present; mean pooling, normalised: true", ""},
		{"an embedding model with max pooling", append([]string{"--openvino-lib", lib}, common(embeddingMaxPooling)...), nil, 1,
			"model odd", checkFail, "pooling_mode_max_tokens", "1_Pooling/config.json"},
		{"a rerank model", append([]string{"--openvino-lib", lib}, common(rerank)...), nil, 0,
			"model tinyrerank", checkOK, "a rerank model: IR, weights and tokenizer present", ""},
		{"a speech model without its generation config", append([]string{"--openvino-lib", lib}, common(whisperNoConfig)...), nil, 1,
			"model whisper-base-ov", checkFail, "generation_config.json", "npud pull OpenVINO/whisper-base-ov"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.setenv {
				t.Setenv(k, v)
			}
			code, r, text := runDoctor(t, noEnv, tc.args...)
			if tc.name == "no library" && r.Library != nil {
				t.Skip("this machine has OpenVINO GenAI installed")
			}
			assert.Equal(t, tc.wantCode, code, text)
			assert.Equal(t, tc.wantCode == 0, r.Ready)
			c := check(r, tc.check)
			assert.Equal(t, tc.status, c.Status, "%s: %+v", tc.check, r.Checks)
			assert.Contains(t, c.Detail, tc.detailHas)
			assert.Contains(t, c.Fix, tc.fixHas)
			for _, c := range r.Checks {
				if c.Status == checkFail {
					assert.NotEmpty(t, c.Fix, "every failure says how to fix it: %+v", c)
					assert.Contains(t, text, c.Detail, "the text output says it too")
				}
			}
			if code == 0 {
				require.NotNil(t, r.Library)
				assert.Equal(t, "2026.3", r.Library.Version)
				assert.Equal(t, "--openvino-lib", r.Library.Source)
				require.Len(t, r.Devices, 2)
				assert.Equal(t, doctorDevice{Name: "NPU", FullName: "Test NPU device", DriverVersion: "1688"}, r.Devices[1])
				assert.Contains(t, text, "ready: npud serve runs models on OpenVINO")
			}
			if tc.name == "no library" {
				var sources []string
				for _, a := range r.Searched {
					sources = append(sources, a.Source)
				}
				assert.Equal(t, []string{"INTEL_OPENVINO_DIR", "archive", "python wheel", "system"}, sources, "where it looked, in order")
			}
		})
	}
}

// Issue 14: an Ollama on npud's address is named, with how to move one.
func TestDoctorNamesAnOllamaOnTheAddress(t *testing.T) {
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "Ollama is running") })}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	_, r, _ := runDoctor(t, env(), "--listen", ln.Addr().String(), "--models-dir", t.TempDir())
	c := check(r, "listen address")
	assert.Equal(t, checkFail, c.Status)
	assert.Contains(t, c.Detail, "Ollama listens on")
	assert.Contains(t, c.Fix, "systemctl disable --now ollama")
}

// Issue 27: doctor told people to `usermod -aG render npud`, but the unit
// runs as a DynamicUser (there is no npud account) that joins render
// through SupplementaryGroups; a node in another group needs a udev rule.
func TestDeviceNodeFixFitsTheDynamicUser(t *testing.T) {
	unit := systemd.ServiceUnit()
	require.Contains(t, unit, "DynamicUser=yes")
	require.Contains(t, unit, "SupplementaryGroups=render")

	fix := deviceNodeFix("/dev/accel/accel0", "render")
	assert.NotContains(t, fix, " npud", "no npud account to add to a group")
	assert.Contains(t, fix, "usermod -a -G render $USER")
	assert.Contains(t, fix, "SupplementaryGroups=render")

	fix = deviceNodeFix("/dev/accel/accel0", "root")
	assert.Contains(t, fix, `SUBSYSTEM=="accel", KERNEL=="accel*", GROUP="render", MODE="0660"`)
	assert.Contains(t, fix, "docs/OPENVINO.md")
}

// Issue 35: doctor's fix for the models folder says where models go for
// root and for other users, and how to choose another folder.
func TestDoctorSaysHowToChooseTheModelsFolder(t *testing.T) {
	for _, models := range []string{filepath.Join(t.TempDir(), "nope"), t.TempDir()} {
		_, r, _ := runDoctor(t, env(), "--models-dir", models, "--cache-dir", "", "--listen", freeAddr(t))
		c := check(r, "models folder")
		assert.Equal(t, checkFail, c.Status, "%+v", r.Checks)
		assert.Contains(t, c.Fix, "~/.local/state/npud/models")
		assert.Contains(t, c.Fix, "--models-dir DIR (or NPUD_MODELS_DIR)")
	}
}
