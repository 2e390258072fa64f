package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Issue 27: `npud list` said "1 minutes ago".
func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                            "0 seconds",
		time.Second:                  "1 second",
		59 * time.Second:             "59 seconds",
		time.Minute:                  "1 minute",
		90 * time.Second:             "1 minute",
		2 * time.Minute:              "2 minutes",
		time.Hour:                    "1 hour",
		47 * time.Hour:               "47 hours",
		48 * time.Hour:               "2 days",
		-time.Minute:                 "0 seconds",
		24*time.Hour*365 + time.Hour: "365 days",
	} {
		assert.Equal(t, want, humanDuration(d), "%s", d)
	}
}
