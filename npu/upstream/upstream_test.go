package upstream

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/nputest"
)

// Issue 25 item 4: an upstream's error answer goes to the log, bounded and
// with npud's key masked where the upstream quoted it; the error the
// tenant sees holds neither.
func TestRefusalsAreLoggedBoundedAndMasked(t *testing.T) {
	const key = "upstream-secret-key-0123456789"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprintf(w, `{"error":{"message":"you sent %s %s"}}`, r.Header.Get("Authorization"), strings.Repeat("x", 5000))
	}))
	t.Cleanup(srv.Close)
	var log bytes.Buffer
	e, err := New(Config{Name: "far", URL: srv.URL, APIKey: key, Models: []string{"m"}}, slog.New(slog.NewTextHandler(&log, nil)))
	require.NoError(t, err)
	t.Cleanup(e.Close)
	_, err = e.Generate(t.Context(), &npu.Request{Model: "m", Prompt: "x"}, func(string) npu.Status { return npu.Running })
	require.ErrorIs(t, err, npu.ErrInvalidRequest)
	assert.Equal(t, `upstream "far" refused the request (400 Bad Request); its answer is in npud's log`, err.Error())
	assert.Contains(t, log.String(), "you sent Bearer ****")
	assert.NotContains(t, log.String(), key)
	assert.Contains(t, log.String(), "bytes more)", "the logged answer is cut")
	assert.Less(t, log.Len(), 2000)
}

func TestUpstreamDescribesWhatItDoes(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	e, err := New(Config{Name: "far", URL: srv.URL, Models: []string{"m"}}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(e.Close)
	nputest.AssertFeatures(t, e, "m")
}
