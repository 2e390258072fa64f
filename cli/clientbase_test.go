package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 35: a wildcard address in --host, NPUD_HOST or OLLAMA_HOST means
// this machine to a client.
func TestClientBase(t *testing.T) {
	for _, tc := range []struct{ host, want string }{
		{"", "http://127.0.0.1:11434"},
		{"0.0.0.0:8080", "http://127.0.0.1:8080"},
		{"0.0.0.0", "http://127.0.0.1:11434"},
		{"http://0.0.0.0:8080/", "http://127.0.0.1:8080"},
		{"[::]:8080", "http://[::1]:8080"},
		{":8080", "http://127.0.0.1:8080"},
		{"example.com", "http://example.com:11434"},
		{"https://npud.example.com:443", "https://npud.example.com:443"},
		{"[::1]:9", "http://[::1]:9"},
	} {
		t.Run(tc.host, func(t *testing.T) {
			got, err := clientBase("", func(k string) string { return map[string]string{"OLLAMA_HOST": tc.host}[k] })
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
