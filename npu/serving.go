package npu

import (
	"fmt"
	"time"
)

// LoadedModel is a model in memory and when it will be unloaded.
type LoadedModel struct {
	Model     ModelInfo
	LoadedAt  time.Time
	ExpiresAt time.Time // zero: kept until unloaded explicitly
	// Preloaded: loaded by --preload and kept whatever a request's
	// keep_alive says, until unloaded explicitly by someone allowed to.
	Preloaded bool
	// InUse counts the requests using the model now; its keep-alive
	// starts when the last one ends.
	InUse int
}

// CacheResult says what a request found in its model's conversation cache
// when it was granted the slot.
type CacheResult string

const (
	CacheNone      CacheResult = ""          // not a conversation
	CacheContinued CacheResult = "continued" // it continues the conversation the model ran last
	CacheNew       CacheResult = "new"       // the model ran no conversation yet
	CacheSwitched  CacheResult = "switched"  // the model ran another conversation last
)

// CheckVision refuses images for a model without a vision encoder. The
// APIs ask it before decoding or fetching any image.
func CheckVision(m ModelInfo) error {
	if !m.Details.Vision {
		return &InvalidRequestError{Param: "images", Message: fmt.Sprintf(
			"model %q does not support images: its folder holds no vision encoder", m.ID)}
	}
	return nil
}
