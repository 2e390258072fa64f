//go:build windows

package hub

import "golang.org/x/sys/windows"

// freeSpace is the bytes the caller may still use on the volume holding
// dir (its quota included).
func freeSpace(dir string) (int64, error) {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return 0, err
	}
	var avail, total, free uint64
	if err := windows.GetDiskFreeSpaceEx(p, &avail, &total, &free); err != nil {
		return 0, err
	}
	return int64(avail), nil //nolint:gosec // a volume's size fits
}
