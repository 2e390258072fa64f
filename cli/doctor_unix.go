//go:build unix

package cli

import (
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// groupOf names the group owning path ("render" for /dev/accel/accel0).
func groupOf(path string) string {
	st, err := os.Stat(path)
	if err != nil {
		return "render"
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return "render"
	}
	g, err := user.LookupGroupId(strconv.FormatUint(uint64(sys.Gid), 10))
	if err != nil {
		return "render"
	}
	return g.Name
}
