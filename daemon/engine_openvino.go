//go:build openvino && cgo

package daemon

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/openvino"
)

// openvinoBuilt says this binary has the OpenVINO GenAI engine.
const openvinoBuilt = true

func newOpenVINOEngine(cfg Config, log *slog.Logger) (npu.Engine, error) {
	return openvino.New(openvino.Config{
		ModelsDir:      cfg.ModelsDir,
		Device:         cfg.Device,
		MaxPromptLen:   cfg.NPUMaxPromptLen,
		MinResponseLen: cfg.NPUMinResponseLen,
		PrefillHint:    cfg.NPUPrefillHint,
		GenerateHint:   cfg.NPUGenerateHint,
		CacheDir:       cfg.CacheDir,
		Hub:            cfg.hubClient(),
	}, log)
}

// printDevices lists the devices OpenVINO sees.
func printDevices(w io.Writer) error {
	devices, err := openvino.Devices()
	if err != nil {
		return err
	}
	for _, d := range devices {
		fmt.Fprintf(w, "%-8s %s\n", d.Name, d.FullName)
	}
	return nil
}
