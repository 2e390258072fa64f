package route

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTable(t *testing.T) {
	tab := NewTable(
		Set{Generation: []string{"/v1/chat/completions"}, WebSocket: []string{"/v1/realtime"}},
		Set{Generation: []string{"/api/chat", "/api/embed"}, ModelManagement: []string{"/api/pull"}},
	)
	for _, tc := range []struct {
		path                          string
		generation, management, webSo bool
	}{
		{"/v1/chat/completions", true, false, false},
		{"/api/chat", true, false, false},
		{"/api/embed", true, false, false},
		{"/api/pull", false, true, false},
		{"/v1/realtime", false, false, true},
		{"/api/tags", false, false, false},
	} {
		assert.Equal(t, tc.generation, tab.Generation(tc.path), tc.path)
		assert.Equal(t, tc.management, tab.ModelManagement(tc.path), tc.path)
		assert.Equal(t, tc.webSo, tab.WebSocket(tc.path), tc.path)
	}
}
