// Package e2e holds npud's end-to-end tests, apart from the packages they
// exercise: the soak and fault harness (thousands of streams with slow,
// vanishing and cancelling clients and engine faults, checked byte for
// byte) and real nginx in front of a real server. `make soak` runs the
// harness at full size; `make test` runs a small one.
package e2e
