package cli

import (
	"fmt"
	"io"
)

// loadLine shows `npud run` the progress of the model's load that the
// stream's heartbeats carry: one line kept up to date on a terminal, a
// line each otherwise; cleared when the answer starts.
type loadLine struct {
	w        io.Writer
	terminal bool
	shown    bool
}

func (l *loadLine) show(status string) {
	if status == "" {
		return
	}
	if l.terminal {
		fmt.Fprintf(l.w, "\r\033[K%s", terminalSafe(status, false))
	} else {
		fmt.Fprintln(l.w, terminalSafe(status, false))
	}
	l.shown = true
}

func (l *loadLine) clear() {
	if l.shown && l.terminal {
		fmt.Fprint(l.w, "\r\033[K")
	}
	l.shown = false
}
