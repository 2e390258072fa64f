package daemon

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/compilecache"
)

// compileCacheFor is what tells a model's first compile (minutes on an
// NPU) from a load of its cached blob, for the progress clients see while
// they wait: the index of cfg.CacheDir, for an engine that compiles
// models (not the simulated one); nil when there is no cache folder.
func compileCacheFor(cfg Config, engine npu.Engine, log *slog.Logger) npu.CompileCache {
	if !engine.Describe().LoadsModels || engine.Simulated() || cfg.CacheDir == "" {
		return nil
	}
	return compilecache.New(cfg.CacheDir, func(model string) string {
		// What OpenVINO hashes into a blob's name: the model (its files,
		// npud-properties.json included), the device and the compile
		// properties.
		return fmt.Sprintf("device=%s max_prompt_len=%d min_response_len=%d prefill_chunk=%d prefix_caching=%t prefill_hint=%s generate_hint=%s files=%s",
			cfg.Device, cfg.NPUMaxPromptLen, cfg.NPUMinResponseLen, cfg.NPUPrefillChunk, cfg.NPUPrefixCaching,
			cfg.NPUPrefillHint, cfg.NPUGenerateHint, compilecache.FolderFingerprint(filepath.Join(cfg.ModelsDir, model)))
	}, log)
}

// namedDevice is the configured device as load progress names it: "" for
// AUTO, which picks one during the load.
func namedDevice(device string) string {
	if device == "AUTO" {
		return ""
	}
	return device
}
