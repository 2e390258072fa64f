//go:build openvino && cgo && ovtest

package daemontest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/npud/npud/daemon"
)

// EngineUnderTest names the engine the engine-agnostic suites run on:
// "openvino" when NPUD_TEST_ENGINE says so in a build against npud's GenAI
// test library, else "sim".
func EngineUnderTest() string {
	if os.Getenv("NPUD_TEST_ENGINE") == "openvino" {
		return "openvino"
	}
	return "sim"
}

// StartOpenVINO serves cfg (adjusted by mutate) with the OpenVINO engine
// on one model folder named "sim", so the suites' requests name it as they
// name the simulated model.
func StartOpenVINO(t testing.TB, mutate func(*daemon.Config)) *Server {
	t.Helper()
	models := t.TempDir()
	WriteOpenVINOModel(t, models, "sim")
	t.Setenv("OVTEST_DEVICES", "CPU")
	cfg := Defaults(t)
	if mutate != nil {
		mutate(&cfg)
	}
	cfg.Engine, cfg.ModelsDir, cfg.Device, cfg.CacheDir = "openvino", models, "CPU", ""
	return Start(t, cfg, nil)
}

// WriteOpenVINOModel makes a model folder the test library loads: the IR
// file and a tokenizer_config.json with a chat template (without one GenAI,
// and so npud, refuses chat).
func WriteOpenVINOModel(t testing.TB, models, name string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(models, name), 0o755); err != nil {
		t.Fatal(err)
	}
	for file, content := range map[string]string{
		"openvino_model.xml":    "<net/>",
		"tokenizer_config.json": `{"chat_template": "{% for m in messages %}{{ m.content }}{% endfor %}"}`,
	} {
		if err := os.WriteFile(filepath.Join(models, name, file), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
