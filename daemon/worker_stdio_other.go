//go:build !unix

package daemon

import (
	"io"
	"os"
)

// workerStdio is the worker's connection to the daemon: its standard input
// and output. (Native code printing to stdout would corrupt it; on Windows
// OpenVINO's plugins log through their own sinks.)
func workerStdio() (io.ReadWriteCloser, error) {
	return stdioConn{Reader: os.Stdin, Writer: os.Stdout}, nil
}
