package daemontest

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Client is a raw HTTP client for byte-level tests of one server. It asks
// for no compression, so the test sees the bytes as the server sent them.
type Client struct {
	URL  string
	HTTP *http.Client
}

// NewClient returns a client for base; its idle connections close when
// the test ends.
func NewClient(t testing.TB, base string) *Client {
	transport := &http.Transport{DisableCompression: true}
	t.Cleanup(transport.CloseIdleConnections)
	return &Client{URL: base, HTTP: &http.Client{Transport: transport, Timeout: 30 * time.Second}}
}

// Do sends body to path with the given header name/value pairs and returns
// the response with its whole body.
func (c *Client) Do(t testing.TB, method, path, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, c.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		if http.CanonicalHeaderKey(header[i]) == "Host" {
			req.Host = header[i+1] // net/http sends req.Host, not a Host header
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.HTTP.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, raw
}
