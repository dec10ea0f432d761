package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// memfdResident is the memory resident in the memfds that processes pids
// hold open (gVisor's sentry keeps the sandbox's memory in one), each file
// counted once however many processes hold it. It is read with mincore on
// a read-only mapping of each file, which adds no page: the PSS of the
// processes mapping such a file is unreliable when the kernel backs it with
// large folios that are only partly mapped.
func memfdResident(pids []int) (int64, error) {
	seen := map[uint64]bool{}
	var total int64
	for _, pid := range pids {
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue // it exited meanwhile
		}
		for _, d := range ents {
			p := filepath.Join(dir, d.Name())
			target, err := os.Readlink(p)
			if err != nil || !strings.HasPrefix(target, "/memfd:") {
				continue
			}
			var st syscall.Stat_t
			if err := syscall.Stat(p, &st); err != nil || seen[st.Ino] {
				continue
			}
			seen[st.Ino] = true
			n, err := residentBytes(p, st.Ino)
			if err != nil {
				return 0, fmt.Errorf("memfd %s of pid %d: %w", target, pid, err)
			}
			total += n
		}
	}
	return total, nil
}

// residentBytes counts the resident pages of the file at path (a
// /proc/PID/fd link), which must still be the file of inode ino once
// opened: the process may have put another file at that descriptor since
// it was looked at. The file is mapped a window at a time, so a memfd of
// any size (the process chose it) costs this process a bounded vector.
func residentBytes(path string, ino uint64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil || st.Ino != ino {
		return 0, nil // another file now: not the one counted
	}
	page := int64(os.Getpagesize())
	const window = 1 << 30
	vec := make([]byte, window/page)
	var n int64
	for off := int64(0); off < st.Size; off += window {
		size := min(window, st.Size-off)
		m, err := syscall.Mmap(int(f.Fd()), off, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
		if err != nil {
			return 0, fmt.Errorf("mmap: %w", err)
		}
		v := vec[:(size+page-1)/page]
		_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&v[0])))
		syscall.Munmap(m)
		if errno != 0 {
			return 0, fmt.Errorf("mincore: %w", errno)
		}
		for _, b := range v {
			n += int64(b & 1)
		}
	}
	return n * page, nil
}
