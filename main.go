// Command npud is a streaming LLM server for Intel NPUs: it runs models
// through OpenVINO GenAI and serves OpenAI and Ollama clients.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/npud/npud/cli"
)

func main() {
	// SIGTERM and SIGINT start a graceful drain; a second one is not
	// caught, so it stops the process at once. `npud run` handles Ctrl-C
	// itself: it stops an answer, not the chat; under `npud launch` it is
	// the agent's.
	signals := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if len(os.Args) > 1 && (os.Args[1] == "run" || os.Args[1] == "launch") {
		signals = signals[1:]
	}
	ctx, stop := signal.NotifyContext(context.Background(), signals...)
	go func() {
		<-ctx.Done()
		stop()
	}()
	code := cli.Main(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
