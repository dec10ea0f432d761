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
			n, err := residentBytes(p, st.Size)
			if err != nil {
				return 0, fmt.Errorf("memfd %s of pid %d: %w", target, pid, err)
			}
			total += n
		}
	}
	return total, nil
}

// residentBytes counts the resident pages of the file at path, size bytes
// long.
func residentBytes(path string, size int64) (int64, error) {
	if size <= 0 {
		return 0, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	m, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return 0, fmt.Errorf("mmap: %w", err)
	}
	defer syscall.Munmap(m)
	page := int64(os.Getpagesize())
	vec := make([]byte, (size+page-1)/page)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		return 0, fmt.Errorf("mincore: %w", errno)
	}
	var n int64
	for _, b := range vec {
		n += int64(b & 1)
	}
	return n * page, nil
}
