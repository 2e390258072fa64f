package errcheck

import (
	"fmt"
	"io"
	"os"
)

func Clean(path string, body io.ReadCloser) {
	os.Remove(path)            // want errcheck "Error return value of `os.Remove` is not checked"
	fmt.Fprintln(os.Stderr, 1) // excluded: printing
	body.Close()               // excluded: a response body's Close
}
