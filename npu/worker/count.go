package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/npud/npud/npu"
)

// CountPrompt implements npu.Engine: the model's worker renders and counts
// the request's prompt (its tokenizer runs there, with the rest of the
// native code), and the daemon waits for the answer while ctx lasts. A
// worker that dies during the count is a fault like a generation's: the
// count ends with engine_crashed, the model is lost and the next request
// loads it again; a request whose counts crashed a worker twice, and a
// tenant whose requests keep crashing workers, are refused first, as for
// generations. There is no watchdog: nothing calls back during a count,
// and the tokenizer bounds its own time.
func (e *Engine) CountPrompt(ctx context.Context, req *npu.Request) (int, error) {
	if !e.features.ExactCounts {
		return 0, fmt.Errorf("model %q: engine %s counts no prompts: %w", req.Model, e.cfg.Name, npu.ErrPromptNotCounted)
	}
	fp := fingerprint(req)
	if err := e.crashes.check(fp, req.Tenant); err != nil {
		return 0, err
	}
	p, err := e.running(req.Model)
	if err != nil {
		return 0, err
	}
	encoded, err := json.Marshal(req)
	if err != nil {
		return 0, err
	}
	device := e.DeviceOf(req.Model)
	done, err := p.do(ctx, Job{ID: e.jobIDs.Add(1), Kind: jobCount, Model: req.Model, Request: encoded})
	var fault *FaultError
	switch {
	case errors.As(err, &fault) && fault.unsent:
		return 0, e.diedIdle(req.Model, p)
	case errors.As(err, &fault):
		fault.Device = device
		return 0, modelLost(e.requestFault(req, fp, p, fault))
	case err != nil:
		return 0, err
	}
	return done.Tokens, nil
}
