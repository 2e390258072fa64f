package worker

import (
	"os/exec"
	"syscall"
)

// keepWithParent makes the kernel kill the worker when the daemon dies,
// however it dies: a worker never outlives the daemon.
func keepWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

func adopt(*exec.Cmd) {}
