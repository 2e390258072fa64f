package daemon

import (
	"errors"
	"fmt"
	"syscall"
)

// listenError is a failed listen, with what to do when the address is
// taken: another npud, or an Ollama on its port 11434, which npud shares.
func listenError(addr string, err error) error {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	return fmt.Errorf("listen on %s: %w: another server has it (an npud already running, or Ollama, whose port 11434 npud shares: "+
		"stop it, or give npud another address with --listen 127.0.0.1:11435 (or NPUD_LISTEN, or listen in the configuration file); "+
		"npud doctor says who has it)", addr, err)
}
