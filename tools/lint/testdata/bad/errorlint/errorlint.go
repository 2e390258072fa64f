package errorlint

import (
	"fmt"
	"io"
)

func Read(err error) error {
	if err == io.EOF { // want errorlint "comparing with == will fail on wrapped errors"
		return nil
	}
	return fmt.Errorf("reading: %v", err) // want errorlint "non-wrapping format verb for fmt.Errorf"
}
