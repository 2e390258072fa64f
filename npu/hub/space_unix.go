//go:build unix

package hub

import "golang.org/x/sys/unix"

// freeSpace is the bytes an unprivileged writer may still use on the file
// system holding dir (the blocks reserved for root do not count).
func freeSpace(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil //nolint:gosec,unconvert // sizes fit; the field types differ per OS
}
