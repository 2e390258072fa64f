package daemontest

import (
	"context"
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
// the response with its whole body, read and closed.
//
//bodyclose:handled
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

// Post is hc.Post under ctx: the request ends with ctx (the test's, as a
// rule). A nil hc is http.DefaultClient.
func Post(ctx context.Context, hc *http.Client, url, contentType string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", contentType)
	return client(hc).Do(req)
}

// Get is hc.Get under ctx. A nil hc is http.DefaultClient.
func Get(ctx context.Context, hc *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	return client(hc).Do(req)
}

func client(hc *http.Client) *http.Client {
	if hc == nil {
		return http.DefaultClient
	}
	return hc
}
