package daemon_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
)

// slowBodyRequest sends a request's headers and the first bytes of a body
// it announces as far longer, over a raw connection, and returns the
// connection and what the server answered, its body read and closed.
//
//bodyclose:handled
func slowBodyRequest(t *testing.T, base, headers string) (net.Conn, *http.Response) {
	t.Helper()
	return slowBody(t, base, "POST", headers)
}

// slowBody is slowBodyRequest with method.
//
//bodyclose:handled
func slowBody(t *testing.T, base, method, headers string) (net.Conn, *http.Response) {
	t.Helper()
	conn, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", strings.TrimPrefix(base, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = conn.Write([]byte(method + " /v1/chat/completions HTTP/1.1\r\n" + headers +
		"Content-Type: application/json\r\nContent-Length: 200000\r\n\r\n{\"model\":"))
	require.NoError(t, err)
	// The client's own bound, far beyond what the server may take: a
	// server that waits for the body fails the test here, not in a hang.
	require.NoError(t, conn.SetDeadline(time.Now().Add(20*time.Second)))
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	require.NoError(t, err)
	_, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	_, err = r.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the server closed the connection, before the client's deadline")
	return conn, resp
}

// Issue 25 item 2: a request refused before its body is read (no key, a
// wrong key, a bad Host) is answered and its connection closed at once,
// whatever its body still announces; nothing waits to drain it. The
// body-read timeout is a minute here: the test would wait that long if it
// were what closed the connection.
func TestRefusedSlowBodiesCloseTheConnection(t *testing.T) {
	keyed := daemontest.StartSim(t, func(c *daemon.Config) { c.APIKeys = []daemon.APIKey{alice}; c.BodyReadTimeout = time.Minute }, nil)
	keyless := daemontest.StartSim(t, func(c *daemon.Config) { c.BodyReadTimeout = time.Minute }, nil)
	for _, tc := range []struct {
		name, base, headers string
		status              int
	}{
		{"no key", keyed.URL, "Host: localhost\r\n", http.StatusUnauthorized},
		{"wrong key", keyed.URL, "Host: localhost\r\nAuthorization: Bearer sk-wrong-0123456789\r\n", http.StatusUnauthorized},
		{"bad host", keyless.URL, "Host: attacker.example\r\n", http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, resp := slowBodyRequest(t, tc.base, tc.headers)
			assert.Equal(t, tc.status, resp.StatusCode)
			assert.True(t, resp.Close, "Connection: close")
			assert.Less(t, time.Since(start), 20*time.Second)
		})
	}
}

// Issue 25 item 2: the body-read timeout holds for every request whatever
// answers it, here a CORS preflight (answered before any API key or body
// limit was looked at): the server stops waiting for its body after the
// timeout and closes the connection.
func TestBodyReadTimeoutHoldsForEveryAnswer(t *testing.T) {
	srv := daemontest.StartSim(t, func(c *daemon.Config) {
		c.APIKeys = []daemon.APIKey{alice}
		c.BodyReadTimeout = 100 * time.Millisecond
	}, nil)
	_, resp := slowBody(t, srv.URL, "OPTIONS", "Host: localhost\r\nOrigin: http://localhost:3000\r\nAccess-Control-Request-Method: POST\r\n")
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
}
