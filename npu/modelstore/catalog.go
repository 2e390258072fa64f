package modelstore

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/hub"
)

// Catalog is the models folder as an engine serves it: the models listed
// when it opens and again after its own pulls, copies and deletions, not on
// every request. The OpenVINO engine in the daemon and the daemon in front
// of engine workers both serve through one.
type Catalog struct {
	store  *Store
	limits Limits // what each model reports as its context and prompt limit

	mu     sync.Mutex
	models []npu.ModelInfo
}

// OpenCatalog lists the store's models. A fresh service's models folder
// (under its StateDirectory) does not exist yet: an empty one is made, a
// valid start, ready for pulls.
func OpenCatalog(store *Store, limits Limits) (*Catalog, error) {
	if err := os.MkdirAll(store.Dir(), 0o750); err != nil {
		return nil, fmt.Errorf("models directory: %w", err)
	}
	c := &Catalog{store: store, limits: limits}
	if err := c.rescan(); err != nil {
		return nil, err
	}
	return c, nil
}

// Models lists the models.
func (c *Catalog) Models() []npu.ModelInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.models) // rescan replaces the list under the lock
}

// Has reports whether model is listed.
func (c *Catalog) Has(model string) bool {
	for _, m := range c.Models() {
		if m.ID == model {
			return true
		}
	}
	return false
}

// rescan reads the models folder again after it changed.
func (c *Catalog) rescan() error {
	models, err := c.store.Scan(0)
	if err != nil {
		return err
	}
	for i := range models {
		if models[i].Details.SpeechOnly {
			continue // a speech model takes no prompt: it reports no context
		}
		if models[i].Details.EmbeddingOnly || models[i].Details.RerankOnly {
			// An encoder's context is what it was trained for.
			models[i].ContextLength = models[i].Details.TrainedContext
			continue
		}
		models[i].ContextLength, models[i].PromptLimit = c.limits(c.store.Path(models[i].ID))
	}
	c.mu.Lock()
	c.models = models
	c.mu.Unlock()
	return nil
}

// Pull fetches a hub repository (owner/name) as the model named after its
// last element, unless it is here already. The store runs one pull per
// repository and leaves nothing behind when one fails.
func (c *Catalog) Pull(ctx context.Context, name string, progress func(npu.PullProgress)) error {
	if c.Has(name) || c.Has(hub.ModelName(name)) {
		return nil // already here
	}
	if err := c.store.Pull(ctx, name, progress); err != nil {
		return err
	}
	return c.rescan()
}

// Delete removes the model's folder. Unloading it first is the caller's
// part (serve.Router.Delete does it through the lifecycle).
func (c *Catalog) Delete(name string) error {
	if !c.Has(name) {
		return fmt.Errorf("model %q: %w", name, npu.ErrModelNotFound)
	}
	if err := c.store.Delete(name); err != nil {
		return err
	}
	return c.rescan()
}

// Copy copies the model's folder under a new name, complete or not at all.
func (c *Catalog) Copy(ctx context.Context, source, destination string) error {
	if !c.Has(source) {
		return fmt.Errorf("model %q: %w", source, npu.ErrModelNotFound)
	}
	if err := c.store.Copy(ctx, source, destination); err != nil {
		return err
	}
	return c.rescan()
}
