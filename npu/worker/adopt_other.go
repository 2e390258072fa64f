//go:build !windows && !linux

package worker

import "os/exec"

func adopt(*exec.Cmd) {}
