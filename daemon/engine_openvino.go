//go:build cgo

package daemon

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/modelstore"
	"github.com/npud/npud/npu/openvino"
)

// OpenVINOBuilt says this binary carries the OpenVINO GenAI engine (it
// loads the library at run time; every cgo build does).
const OpenVINOBuilt = true

// openLibrary finds and loads OpenVINO GenAI's C library as configured.
func openLibrary(cfg Config, getenv func(string) string, log *slog.Logger) (*openvino.Library, error) {
	return openvino.OpenLibrary(openvino.LibraryOptions{Path: cfg.OpenVINOLib, Getenv: getenv, Log: log})
}

// newOpenVINOEngine loads the library and starts the engine on it.
func newOpenVINOEngine(cfg Config, log *slog.Logger) (npu.Engine, error) {
	lib, err := openLibrary(cfg, os.Getenv, log)
	if err != nil {
		return nil, err
	}
	return startOpenVINO(cfg, lib, log)
}

func startOpenVINO(cfg Config, lib *openvino.Library, log *slog.Logger) (npu.Engine, error) {
	ocfg := openvinoConfig(cfg, lib)
	ocfg.Hub = cfg.HubClient()
	return openvino.New(ocfg, log)
}

// openvinoConfig is the engine's configuration from npud's.
func openvinoConfig(cfg Config, lib *openvino.Library) openvino.Config {
	return openvino.Config{
		Library:          lib,
		ModelsDir:        cfg.ModelsDir,
		Device:           cfg.Device,
		MaxPromptLen:     cfg.NPUMaxPromptLen,
		MinResponseLen:   cfg.NPUMinResponseLen,
		PrefillHint:      cfg.NPUPrefillHint,
		GenerateHint:     cfg.NPUGenerateHint,
		CacheDir:         cfg.CacheDir,
		PrefillChunkSize: cfg.NPUPrefillChunk,
		PrefixCaching:    cfg.NPUPrefixCaching,
		OperatorSet:      cfg.NPUOperatorSet,
	}
}

// autoEngine is --engine auto: the OpenVINO engine when the library loads
// and the models folder holds a model, else the simulated engine and the
// reason.
func autoEngine(cfg Config, log *slog.Logger) (npu.Engine, string, error) {
	lib, err := openLibrary(cfg, os.Getenv, log)
	if err != nil {
		return nil, err.Error(), nil //nolint:nilerr // under --engine auto this failure is why the simulated engine serves, not an error
	}
	models, err := modelsIn(cfg.ModelsDir)
	if err != nil || len(models) == 0 {
		return nil, fmt.Sprintf("OpenVINO GenAI %s loaded from %s, but the models folder %s holds no model (npud pull OpenVINO/Qwen2.5-1.5B-Instruct-int4-ov)", //nolint:nilerr // under --engine auto this failure is why the simulated engine serves, not an error
			lib.Version, lib.GenAIPath, cfg.ModelsDir), nil
	}
	engine, err := startOpenVINO(cfg, lib, log)
	return engine, "", err
}

// openvinoLimits is what the OpenVINO engine's models report: on the NPU
// each model's prompt limit and KV cache.
func openvinoLimits(cfg Config) modelstore.Limits {
	return openvino.ModelLimits(openvinoConfig(cfg, nil))
}

// openvinoWorkerEngine is the OpenVINO engine inside a worker process; it
// tells the daemon each device it compiles for.
func openvinoWorkerEngine(cfg Config, compiling func(model, device string), log *slog.Logger) (npu.Engine, error) {
	lib, err := openLibrary(cfg, os.Getenv, log)
	if err != nil {
		return nil, err
	}
	ocfg := openvinoConfig(cfg, lib)
	ocfg.OnCompile = compiling // the daemon pulls models; the worker only runs them
	return openvino.New(ocfg, log)
}

// findLibrary is where discovery finds OpenVINO GenAI, without loading it.
func findLibrary(cfg Config) (string, error) {
	return openvino.FindLibrary(openvino.LibraryOptions{Path: cfg.OpenVINOLib, Getenv: os.Getenv})
}

// tokenizersEnv is what a worker running the GenAI C library genai needs
// in its environment for GenAI's tokenizer, and nothing more:
// EnvTokenizersPath, when discovery found openvino-tokenizers where GenAI
// does not look by itself (an inherited value is the worker's already).
func tokenizersEnv(genai string) []string {
	file, point, err := openvino.FindTokenizers(genai, "", os.Getenv)
	if err != nil || !point {
		return nil
	}
	return []string{openvino.EnvTokenizersPath + "=" + file}
}
