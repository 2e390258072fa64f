//go:build !linux

package worker

import "os/exec"

// keepWithParent: on systems without PR_SET_PDEATHSIG the worker notices
// the daemon's end when its connection closes, and exits (Serve returns);
// on Windows, adopt puts it in a job object that dies with the daemon.
func keepWithParent(*exec.Cmd) {}
