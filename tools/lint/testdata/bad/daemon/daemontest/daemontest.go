// Package daemontest stands for npud's test helpers, where an unchecked
// Close is allowed and anything else unchecked is not.
package daemontest

import "os"

func Tidy(f *os.File) {
	f.Close()      // excluded: Close in daemontest
	os.Remove("x") // want errcheck "Error return value of `os.Remove` is not checked"
}
