package cli_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/wire/audioin/wavtest"
)

// refusingServer answers every request on one connection with a 401 in
// OpenAI's shape without reading its body, as a server that checks the key
// first does, and reports how many bytes of body the client sent anyway.
func refusingServer(t *testing.T) (url string, bodyBytes <-chan int64) {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	sent := make(chan int64, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer func() { _ = conn.Close() }()
		r := bufio.NewReader(conn)
		req, err := http.ReadRequest(r)
		if err != nil {
			return
		}
		const answer = `{"error":{"message":"this server needs an API key","type":"invalid_request_error","code":"missing_api_key"}}`
		_, _ = io.WriteString(conn, "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nConnection: close\r\n"+
			"Content-Length: "+strconv.Itoa(len(answer))+"\r\n\r\n"+answer)
		_ = conn.(*net.TCPConn).CloseWrite()
		// Whatever the client sends until it closes: body it did not wait
		// to be asked for.
		n, _ := io.Copy(io.Discard, r)
		_ = req.Body.Close()
		sent <- n
	}()
	return "http://" + ln.Addr().String(), sent
}

// Issue 38 item 12: npud transcribe asks before it sends the file (Expect:
// 100-continue), so a server that refuses the request before reading its
// body (no key) is heard, and the file is not sent for nothing: the
// command shows the server's answer, never the broken pipe of a server
// that closed while the file was being written.
func TestTranscribeShowsARefusalBeforeTheFile(t *testing.T) {
	url, bodyBytes := refusingServer(t)
	wav := writeFile(t, "speech.wav", wavtest.Encode([][]float64{wavtest.Tone(440, 0.5, 30, 16000)}, 16000, wavtest.PCM16))
	var out, errOut strings.Builder
	code := cliMain(t, func(string) string { return "" }, []string{"transcribe", wav, "--host=" + url, "--model", "whisper"}, &out, &errOut)
	assert.Equal(t, 1, code)
	assert.Equal(t, "npud transcribe: the daemon at "+url+" needs an API key: set NPUD_API_KEY=KEY for npud's commands\n", errOut.String())
	assert.Empty(t, out.String())
	assert.Zero(t, <-bodyBytes, "bytes of the file sent to a server that had refused it")
}
