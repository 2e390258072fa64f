package cli

import (
	"context"
	"os"
	"os/signal"
)

// interruptible returns a context that Ctrl-C (os.Interrupt, SIGINT on
// Unix) cancels, for one generation: while it runs, Ctrl-C stops the
// answer, not the program.
func interruptible(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	go func() {
		select {
		case <-sig:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() { signal.Stop(sig); cancel() }
}
