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

// deviceNames maps each device OpenVINO sees to its full name, for the
// device-info metric.
func deviceNames() map[string]string {
	devices, err := openvino.Devices()
	if err != nil {
		return nil
	}
	out := make(map[string]string, len(devices))
	for _, d := range devices {
		out[d.Name] = d.FullName
	}
	return out
}
