// Package serve is npud's serving runtime: everything between an accepted
// request and the protocol writer that is not the engine. The Router is
// the one admission point (each tenant's request rate and stream cap,
// admission.go) and resolves the model a request names (alias, local
// engine, upstream); a Pool ties one engine to its Scheduler (FIFO with
// conversation affinity within fairness bounds) and its lifecycle (load on
// first use, keep-alive, unload when idle, a lost model forgotten:
// lifecycle.go, residency.go); the bridge (Stream, bridge.go) turns engine
// callbacks into a bounded, cancellable stream of events.
//
// It sits on the contract (package npu) and the model families' text
// formats, and only the daemon imports it: the APIs and wire read its
// streams as npu.Stream and declare what they need of the Router in npu's
// types (layering_test.go keeps it so).
package serve
