package nilerr

import "os"

func Exists(path string) error {
	if _, err := os.Stat(path); err != nil {
		return nil // want nilerr "error is not nil"
	}
	return nil
}
