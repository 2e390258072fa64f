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
	if err := os.MkdirAll(filepath.Join(models, "sim"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(models, "sim", "openvino_model.xml"), []byte("<net/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OVTEST_DEVICES", "CPU")
	cfg := Defaults(t)
	if mutate != nil {
		mutate(&cfg)
	}
	cfg.Engine, cfg.ModelsDir, cfg.Device, cfg.CacheDir = "openvino", models, "CPU", ""
	return Start(t, cfg, nil)
}
