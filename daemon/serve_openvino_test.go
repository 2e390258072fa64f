//go:build cgo

package daemon

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

// serveOpenVINO serves npud with the OpenVINO engine, on a free loopback
// port and with the flags in args, until the test ends (the serve must
// end cleanly then), and returns its base URL.
func serveOpenVINO(t *testing.T, args ...string) string {
	t.Helper()
	cfg, err := ParseServe(append([]string{"--listen", "127.0.0.1:0", "--engine", "openvino"}, args...), env(), io.Discard)
	require.NoError(t, err)
	srv, err := New(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return "http://" + srv.Addr().String()
}
