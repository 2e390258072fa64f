package errcheck

import (
	"os"
	"testing"
)

func TestNothing(t *testing.T) {
	os.Remove("x") // excluded: tests
}
