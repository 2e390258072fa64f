package daemontest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/npu/openvino/ovtestlib"
)

// EngineUnderTest names the engine the engine-agnostic suites run on:
// "openvino" (npud's GenAI test library, loaded at run time) when
// NPUD_TEST_ENGINE says so, else "sim".
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
	cfg.OpenVINOLib = TestLibrary(t)
	return Start(t, cfg, nil)
}

// TestLibrary is the folder of npud's GenAI test library, built when
// needed; it skips the test where it cannot be built (no gcc or make),
// except in CI.
func TestLibrary(t testing.TB) string {
	t.Helper()
	return ovtestlib.Require(t, ovtestlib.Current)
}

// ToolTemplate is a tokenizer_config.json whose chat template renders
// tools and teaches Qwen's <tool_call> answer, as Qwen 2.5's does.
const ToolTemplate = `{"chat_template": "{% if tools %}<tools>{% for t in tools %}{{ t | tojson }}{% endfor %}</tools> answer with <tool_call>{% endif %}{% for m in messages %}{{ m.content }}{% endfor %}"}`

// WriteOpenVINOModel makes a model folder the test library loads: the IR
// file and a tokenizer_config.json with a chat template (without one GenAI,
// and so npud, refuses chat) that renders tools.
func WriteOpenVINOModel(t testing.TB, models, name string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(models, name), 0o755); err != nil {
		t.Fatal(err)
	}
	for file, content := range map[string]string{
		"openvino_model.xml":    "<net/>",
		"tokenizer_config.json": ToolTemplate,
	} {
		if err := os.WriteFile(filepath.Join(models, name, file), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
