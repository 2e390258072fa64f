package cli_test

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostile holds what a daemon that should not be trusted could send to
// drive a terminal: a title change (OSC 0), a clipboard write (OSC 52), a
// screen clear (CSI), the 8-bit CSI, a bell, a carriage return that
// overwrites the line, and a DCS string.
const hostile = "\x1b]0;pwned\x07\x1b]52;c;ZWNobyBoaQ==\x1b\\\x1b[2J\u009b31m\a\rDCS\x1bPq#0\x1b\\"

// Issue 25 item 6: nothing the network sent reaches the terminal as a
// control sequence: model names and fields (list, ps, show), model text
// (run: newlines and tabs kept), pull status and error messages.
func TestCLIPrintsNoTerminalEscapes(t *testing.T) {
	j := strings.ReplaceAll(strings.ReplaceAll(hostile, `\`, `\\`), "\x1b", `\u001b`)
	j = strings.NewReplacer("\x07", `\u0007`, "\r", `\r`, "\u009b", `\u009b`).Replace(j)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/tags":
			_, _ = w.Write([]byte(`{"models":[{"name":"evil` + j + `","size":1,"modified_at":"` + j + `","details":{"format":"` + j + `"}}]}`))
		case "/api/ps":
			_, _ = w.Write([]byte(`{"models":[{"name":"evil` + j + `","device":"` + j + `","expires_at":"` + j + `"}]}`))
		case "/api/show":
			_, _ = w.Write([]byte(`{"details":{"format":"` + j + `"},"model_info":{"general.architecture":"` + j + `"},"capabilities":["` + j + `"]}`))
		case "/api/chat":
			_, _ = w.Write([]byte(`{"message":{"thinking":"` + j + `","content":""}}` + "\n"))
			_, _ = w.Write([]byte(`{"message":{"content":"line one\n\tindented` + j + `"}}` + "\n"))
			_, _ = w.Write([]byte(`{"error":"boom` + j + `"}` + "\n"))
		case "/api/pull":
			_, _ = w.Write([]byte(`{"status":"pulling ` + j + `"}` + "\n" + `{"error":"disk` + j + `"}` + "\n"))
		case "/v1/audio/transcriptions":
			_, _ = w.Write([]byte("heard " + hostile + "\n"))
		case "/v1/audio/translations":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"message":"bad audio` + j + `","type":"invalid_request_error"}}`))
		case "/api/delete":
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":"not here` + j + `"}`))
		default:
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte("plain" + hostile))
		}
	}))
	defer srv.Close()
	host := "--host=" + srv.URL
	audio := filepath.Join(t.TempDir(), "a.wav")
	require.NoError(t, os.WriteFile(audio, []byte("RIFF"), 0o600))
	var all strings.Builder
	for _, args := range [][]string{
		{"list", host}, {"ps", host}, {"show", host, "m"}, {"run", host, "m", "hi"},
		{"pull", host, "o/m"}, {"rm", host, "m"}, {"stop", host, "m"},
		{"transcribe", audio, host, "--model", "m"}, {"transcribe", audio, host, "--model", "m", "--translate"},
	} {
		_, out, errOut := npud(t, "", args...)
		all.WriteString(out + errOut)
		for _, text := range []string{out, errOut} {
			assert.False(t, strings.ContainsAny(text, "\x1b\x07\r\u009b"), "npud %s printed a control sequence: %q", args[0], text)
		}
	}
	// A status line's reason phrase is the server's too.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = bufio.NewReader(conn).ReadString('\n')
			_, _ = conn.Write([]byte("HTTP/1.1 500 bad\x1b]0;pwned\x07\r\nContent-Length: 4\r\nConnection: close\r\n\r\noops"))
			_ = conn.Close()
		}
	}()
	_, _, errOut := npud(t, "", "list", "--host="+ln.Addr().String())
	assert.False(t, strings.ContainsAny(errOut, "\x1b\x07"), "%q", errOut)
	all.WriteString(errOut)
	text := all.String()
	assert.Contains(t, text, "line one\n\tindented", "model text keeps its newlines and tabs")
	for _, want := range []string{"evil", "boom", "pulling", "disk", "not here", "plain", "heard", "bad audio"} {
		assert.Contains(t, text, want, "the text itself is shown")
	}
	require.NotContains(t, text, "pwned")
}
