package desktop

import (
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/drydockhq/drydock"
)

// vncSecret is the VNC password as it changes over the desktop's life. gen
// counts the changes; started is the gen the running x11vnc was given.
type vncSecret struct {
	mu      sync.Mutex
	pw      string
	gen     uint64
	started uint64
}

// vncPassword returns the password for an x11vnc about to start and notes
// that the start uses the current one.
func (d *Desktop) vncPassword() string {
	s := &d.secret
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started = s.gen
	if s.gen == 0 {
		return d.cfg.VNCPassword
	}
	return s.pw
}

// SetVNCPassword replaces the VNC password, e.g. when a warm sandbox is
// handed to a job. x11vnc reads its password only when it starts, so the
// running one is restarted (open VNC connections drop). It returns at once;
// the restart follows in the background within about a second.
func (d *Desktop) SetVNCPassword(pw string) error {
	if pw == "" {
		return drydock.Errorf(drydock.EINVALID, "empty VNC password")
	}
	s := &d.secret
	s.mu.Lock()
	s.pw = pw
	s.gen++
	gen := s.gen
	s.mu.Unlock()
	go d.enforceVNCPassword(gen)
	return nil
}

// enforceVNCPassword stops any x11vnc started with an older password until
// one started with password gen runs. It loops rather than killing once
// because a start may be under way, built with the old password, when the
// password changes. An x11vnc still there stopGrace after SIGTERM is
// killed: x11vnc cleans up in its signal handler, and a SIGTERM that lands
// while it is inside Xlib can hang it there for good, with SIGTERM blocked.
func (d *Desktop) enforceVNCPassword(gen uint64) {
	deadline := time.Now().Add(readyTimeout)
	var termed *exec.Cmd
	var termedAt time.Time
	for time.Now().Before(deadline) {
		d.mu.Lock()
		closed := d.closed
		d.mu.Unlock()
		s := &d.secret
		s.mu.Lock()
		cur, started := s.gen, s.started
		s.mu.Unlock()
		if closed || cur != gen {
			return // closing, or a newer change enforces itself
		}
		d.vnc.mu.Lock()
		proc := d.vnc.proc
		d.vnc.mu.Unlock()
		if proc != nil && proc.Process != nil {
			if started == gen {
				return
			}
			// Setpgid: the group is x11vnc's own.
			switch {
			case proc != termed:
				termed, termedAt = proc, time.Now()
				_ = syscall.Kill(-proc.Process.Pid, syscall.SIGTERM)
			case time.Since(termedAt) > stopGrace:
				_ = syscall.Kill(-proc.Process.Pid, syscall.SIGKILL)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	d.log.Warn("x11vnc did not restart with the new VNC password in time")
}
