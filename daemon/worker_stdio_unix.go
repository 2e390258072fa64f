//go:build unix

package daemon

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// workerStdio is the worker's connection to the daemon: its standard input,
// and its standard output moved to a descriptor of its own. Descriptor 1
// then points at standard error, so that anything native code prints
// (OpenVINO writes warnings to stdout) lands in the log instead of
// corrupting the stream of frames.
func workerStdio() (io.ReadWriteCloser, error) {
	out, err := unix.Dup(int(os.Stdout.Fd()))
	if err != nil {
		return nil, err
	}
	if err := unix.Dup2(int(os.Stderr.Fd()), int(os.Stdout.Fd())); err != nil {
		return nil, err
	}
	return stdioConn{Reader: os.Stdin, Writer: os.NewFile(uintptr(out), "frames")}, nil
}
