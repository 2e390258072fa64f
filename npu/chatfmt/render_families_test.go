package chatfmt

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// templateNamed is the family's template of that name.
func templateNamed(t *testing.T, templates []Template, name string) Template {
	t.Helper()
	for _, tpl := range templates {
		if tpl.Name == name {
			return tpl
		}
	}
	require.Failf(t, "no such template", "%s", name)
	return Template{}
}

// Llama 3.2's template writes the day strftime_now gives it, as
// "%d %b %Y" writes it (the day zero-padded, the month's English
// abbreviation); Llama 3.1's writes its fixed date whatever the day.
func TestLlama3WritesTheDate(t *testing.T) {
	c := Conversation{
		Messages:            []Message{{Role: "user", Content: "Hi"}},
		AddGenerationPrompt: true,
		Now:                 time.Date(2027, time.March, 5, 23, 59, 0, 0, time.UTC),
	}
	for name, want := range map[string]string{"llama3.1": "Today Date: 26 Jul 2024\n", "llama3.2": "Today Date: 05 Mar 2027\n"} {
		got, err := templateNamed(t, Llama3{}.Templates(), name).Render(c)
		require.NoError(t, err)
		assert.Contains(t, got, want, name)
	}
}
