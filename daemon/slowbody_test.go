package daemon_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
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
// wrong key, a bad Host) is answered at once, and its connection closed
// after a short bounded wait for the rest of its body (issue 38 item 12),
// whatever its body still announces. The body-read timeout is a minute
// here: the test would wait that long if it were what closed the
// connection.
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

// uploadThenRead is a client that sends its whole request before it reads
// the answer, as Python's http.client (under requests) does: the headers,
// then size bytes of body in 64 KB writes. It returns the answer when one
// could be read, and the first write error, if any.
//
//bodyclose:handled
func uploadThenRead(t *testing.T, base, path, headers string, size int) (resp *http.Response, answer string, writeErr error) {
	t.Helper()
	conn, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", strings.TrimPrefix(base, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	require.NoError(t, conn.SetDeadline(time.Now().Add(30*time.Second)))
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\n%sContent-Length: %d\r\n\r\n", path, headers, size)
	require.NoError(t, err)
	piece := bytes.Repeat([]byte{' '}, 64<<10)
	for sent := 0; sent < size; sent += len(piece) {
		if _, err := conn.Write(piece[:min(len(piece), size-sent)]); err != nil {
			return nil, "", err
		}
	}
	r := bufio.NewReader(conn)
	resp, err = http.ReadResponse(r, nil)
	require.NoError(t, err, "the answer, after the whole body was sent")
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp, string(raw), nil
}

// Issue 38 item 12: a request refused before its body is read (no key, a
// bad Host, a body over --max-body-bytes) is answered, and its connection
// closed only after the rest of the body was read and thrown away, so a
// client that sends its whole upload before it reads (Python's requests
// posting 4 MB of audio without a key) reads the refusal instead of a
// broken pipe. Each body here is far more than the socket buffers hold,
// so the client is still writing when the server answers.
func TestRefusedUploadsAreAnsweredNotReset(t *testing.T) {
	keyed := daemontest.StartSim(t, func(c *daemon.Config) { c.APIKeys = []daemon.APIKey{alice} }, nil)
	keyless := daemontest.StartSim(t, func(c *daemon.Config) { c.MaxBodyBytes = 6 << 20 }, nil)
	for _, tc := range []struct {
		name, base, path, headers string
		upload                    int
		status                    int
		says                      string
	}{
		{"no key", keyed.URL, "/v1/audio/transcriptions", "Host: localhost\r\nContent-Type: multipart/form-data; boundary=x\r\n",
			4 << 20, http.StatusUnauthorized, "needs an API key"},
		{"wrong key", keyed.URL, "/api/chat", "Host: localhost\r\nAuthorization: Bearer sk-wrong-0123456789\r\n",
			4 << 20, http.StatusUnauthorized, "not valid"},
		{"bad host", keyless.URL, "/v1/chat/completions", "Host: attacker.example\r\n", 4 << 20, http.StatusForbidden, "not allowed"},
		// 6 MiB read, then refused: 6 MiB more is what a refused body may cost.
		{"over the body limit", keyless.URL, "/v1/chat/completions", "Host: localhost\r\nContent-Type: application/json\r\n",
			12 << 20, http.StatusRequestEntityTooLarge, "larger than the limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, answer, writeErr := uploadThenRead(t, tc.base, tc.path, tc.headers, tc.upload)
			require.NoError(t, writeErr, "the server reset the connection while the client was still sending")
			assert.Equal(t, tc.status, resp.StatusCode, answer)
			assert.Contains(t, answer, tc.says)
			assert.True(t, resp.Close, "Connection: close")
		})
	}
}

// Issue 38 item 12: what is read of a refused body is bounded: a client
// that announces 1 GiB and sends it as fast as it can has its connection
// cut off after --max-body-bytes more were read (plus what the socket
// buffers hold), not read to the end.
func TestRefusedHugeBodyIsCutOff(t *testing.T) {
	const announced = 1 << 30
	srv := daemontest.StartSim(t, func(c *daemon.Config) { c.APIKeys = []daemon.APIKey{alice}; c.MaxBodyBytes = 1 << 20 }, nil)
	conn, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", strings.TrimPrefix(srv.URL, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	require.NoError(t, conn.SetDeadline(time.Now().Add(60*time.Second)))
	_, err = fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\n\r\n", announced)
	require.NoError(t, err)
	piece := bytes.Repeat([]byte{' '}, 64<<10)
	sent := 0
	for ; sent < announced; sent += len(piece) {
		if _, err = conn.Write(piece); err != nil {
			break
		}
	}
	require.Error(t, err, "the server read all %d bytes of a refused body", announced)
	var netErr net.Error
	require.False(t, errors.As(err, &netErr) && netErr.Timeout(), "cut off by the server, not by the client's deadline: %v", err)
	assert.Less(t, sent, 64<<20, "bytes the client could send before the server cut it off")
}
