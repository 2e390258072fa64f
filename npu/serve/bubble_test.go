package serve

import (
	"testing"
	"testing/synctest"
)

// inBubble runs a subtest in a synctest bubble, whose clock its timers and
// sleeps use: timeouts, heartbeats and keep-alives pass at once, and
// exactly. (A bubble cannot run subtests, so each subtest gets its own.)
func inBubble(f func(t *testing.T)) func(t *testing.T) {
	return func(t *testing.T) { synctest.Test(t, f) }
}
