package worker

import "github.com/npud/npud/npu"

// modelLost marks err, the end of a job whose worker a fault took, as
// the loss of the model that worker held (npu.ErrModelLost), for the
// pool's lifecycle to forget it. The text and the class stay err's:
// npu's table lists the crash, hang and refusal classes first.
func modelLost(err error) error { return &lostError{err: err} }

type lostError struct{ err error }

func (e *lostError) Error() string   { return e.err.Error() }
func (e *lostError) Unwrap() []error { return []error{e.err, npu.ErrModelLost} }
