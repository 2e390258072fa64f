//go:build cgo

package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu/openvino"
	"github.com/npud/npud/npu/openvino/ovtestlib"
)

// Issue 14: --engine auto serves OpenVINO when the library loads and a
// model is there, else the simulated engine with the reason; --engine
// openvino without the library is an error that says where it looked.
func TestEngineSelection(t *testing.T) {
	lib := ovtestlib.Require(t, ovtestlib.Current)
	t.Setenv("OVTEST_DEVICES", "CPU")
	withModel := t.TempDir()
	ovtestlib.WriteModel(t, withModel, "tiny")
	log := slog.New(slog.DiscardHandler)
	base := func(engine, libPath, models string) Config {
		cfg, err := ParseServe([]string{"--engine", engine, "--openvino-lib", libPath, "--models-dir", models, "--cache-dir", ""}, env(), io.Discard)
		require.NoError(t, err)
		return cfg
	}

	engine, reason, err := newEngine(base("auto", lib, withModel), log)
	require.NoError(t, err)
	assert.Equal(t, "openvino", engine.Name())
	assert.Empty(t, reason)

	empty := t.TempDir()
	engine, reason, err = newEngine(base("auto", lib, empty), log)
	require.NoError(t, err)
	assert.True(t, engine.Simulated())
	assert.Contains(t, reason, "holds no model")
	assert.Contains(t, reason, empty)

	missing := filepath.Join(t.TempDir(), "nothing-here")
	engine, reason, err = newEngine(base("auto", missing, withModel), log)
	require.NoError(t, err)
	assert.True(t, engine.Simulated(), "auto falls back")
	assert.Contains(t, reason, missing)

	_, _, err = newEngine(base("openvino", missing, withModel), log)
	require.Error(t, err, "an explicit openvino engine does not fall back")
	assert.True(t, errors.Is(err, openvino.ErrNotFound), "%v", err)
	assert.Contains(t, err.Error(), "--engine openvino")
}

// Issue 14: under --engine auto without the library, /health says the
// engine is simulated and why.
func TestHealthSaysWhyTheEngineIsSimulated(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-openvino-here")
	cfg, err := ParseServe([]string{"--listen", "127.0.0.1:0", "--engine", "auto", "--openvino-lib", missing}, env(), io.Discard)
	require.NoError(t, err)
	srv, err := New(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-served)
	}()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+srv.Addr().String()+"/health", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var h map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&h))
	assert.Equal(t, true, h["simulated"])
	assert.Contains(t, h["simulated_why"], missing)
}
