//go:build cgo

package daemon

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
)

// fillConfig sets every field of a Config to a non-zero value, so that a
// setting workerConfig forgets shows up as a difference.
func fillConfig(v reflect.Value) {
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Struct:
			fillConfig(f)
		case reflect.String:
			f.SetString("set")
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int64:
			f.SetInt(7)
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		case reflect.Map:
			f.Set(reflect.MakeMap(f.Type()))
		}
	}
}

// The worker's configuration carries no secret (TestWorkerEnvironmentHoldsNoSecrets),
// but everything the engine inside it is built from: the OpenVINO engine's
// configuration is the same in the worker as in the daemon.
func TestWorkerConfigKeepsTheEngineSettings(t *testing.T) {
	var cfg Config
	fillConfig(reflect.ValueOf(&cfg).Elem())
	w := workerConfig(cfg, "openvino")
	assert.Equal(t, openvinoConfig(cfg, nil), openvinoConfig(w, nil))
	assert.Equal(t, cfg.OpenVINOLib, w.OpenVINOLib)
	assert.Equal(t, [3]any{cfg.SimTTFT, cfg.SimITL, cfg.SimPromptTokenCost}, [3]any{w.SimTTFT, w.SimITL, w.SimPromptTokenCost})
	assert.Equal(t, cfg.LogLevel, w.LogLevel)
	assert.Equal(t, cfg.LogFormat, w.LogFormat)
	assert.Empty(t, w.APIKeys)
	assert.Empty(t, w.HubToken)
	assert.Empty(t, w.Upstreams)
}
