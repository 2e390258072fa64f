package sim

import (
	"testing"

	"github.com/npud/npud/npu/nputest"
)

func TestSimDescribesWhatItDoes(t *testing.T) {
	nputest.AssertFeatures(t, New(Config{}), ModelID)
}
