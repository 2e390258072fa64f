package route

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTable(t *testing.T) {
	tab := NewTable(
		Set{Generation: []string{"/v1/chat/completions"}, WebSocket: []string{"/v1/realtime"}},
		Set{Generation: []string{"/api/chat", "/api/embed"}, Embedding: []string{"/api/embed"}, ModelManagement: []string{"/api/pull"}},
	)
	for _, tc := range []struct {
		path                                     string
		generation, embedding, management, webSo bool
	}{
		{"/v1/chat/completions", true, false, false, false},
		{"/api/chat", true, false, false, false},
		{"/api/embed", true, true, false, false},
		{"/api/pull", false, false, true, false},
		{"/v1/realtime", false, false, false, true},
		{"/api/tags", false, false, false, false},
	} {
		assert.Equal(t, tc.generation, tab.Generation(tc.path), tc.path)
		assert.Equal(t, tc.embedding, tab.Embedding(tc.path), tc.path)
		assert.Equal(t, tc.management, tab.ModelManagement(tc.path), tc.path)
		assert.Equal(t, tc.webSo, tab.WebSocket(tc.path), tc.path)
	}
}
