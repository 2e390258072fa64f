// Package nolint checks //nolint comments: after code they cover their
// line, on a line of their own the statement that follows, whole.
package nolint

import (
	"fmt"
	"os"
)

func Quiet(path string) {
	os.Remove(path) //nolint:errcheck // the reason
	//nolint:errcheck // the reason
	os.Remove(
		path,
	)
	os.Remove(path)      //nolint:nilerr // want errcheck "Error return value of `os.Remove` is not checked"
	fmt.Sprintf("%d", 1) //nolint
}
