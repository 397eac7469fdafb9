package exepages

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Release gives back the resident pages of the running executable's
// read-only mappings: it marks them cold (MADV_COLD, where the kernel has
// it: the first to go under memory pressure), then unmaps them from the
// process (MADV_DONTNEED, which on a private mapping nobody wrote drops
// nothing but the mapping: the next touch maps the page again from the page
// cache, or reads it from the file). Call it when start-up is done.
func Release() (Result, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &st); err != nil {
		return Result{}, fmt.Errorf("release the executable's pages: %w", err)
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return Result{}, fmt.Errorf("release the executable's pages: %w", err)
	}
	spans := releasable(smaps, file{major: uint64(unix.Major(st.Dev)), minor: uint64(unix.Minor(st.Dev)), inode: st.Ino})
	if len(spans) == 0 {
		return Result{}, fmt.Errorf("release the executable's pages: no read-only mapping of it without pages of its own in /proc/self/smaps")
	}
	var res Result
	res.Before, _ = statmFile()
	for _, s := range spans {
		// MADV_COLD is Linux 5.4's: an older kernel refuses it, and the
		// pages are still unmapped below.
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, uintptr(s.start), uintptr(s.end-s.start), unix.MADV_COLD)
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, uintptr(s.start), uintptr(s.end-s.start), unix.MADV_DONTNEED); e != 0 {
			return res, fmt.Errorf("release the executable's pages: madvise %#x-%#x: %w", s.start, s.end, e)
		}
		res.Mapped += s.end - s.start
	}
	res.After, _ = statmFile()
	return res, nil
}

// statmFile reads the process' resident file-backed bytes.
func statmFile() (uint64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	return fileResident(b, os.Getpagesize())
}
