package docker

import (
	"testing"

	"github.com/drydockhq/drydock"
)

// The files a sandbox can write stay below its memory limit, with room
// left for its processes, whatever sizes were asked for.
func TestTmpfsSizesLeaveRoomForProcesses(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	tests := []struct {
		name                 string
		memory, ws, tmp      int64
		wantWS, wantTmp, hom int64
	}{
		// The server's defaults: a 2 GiB workspace asked under 2 GiB.
		{"workspace as large as memory", 2048, 2048, 1024, 1008, 336, 192},
		// The runtime's defaults: only /tmp gives way.
		{"runtime defaults", 4096, 2048, 1024, 2048, 704, 256},
		{"room enough", 8192, 2048, 1024, 2048, 1024, 256},
		// The tight limits of the security tests are left as asked.
		{"tight", 128, 16, 8, 16, 8, 8},
		{"small", 256, 96, 8, 96, 8, 16},
	}
	for _, tt := range tests {
		ws, tmp, home := tmpfsSizes(drydock.Resources{MemoryBytes: tt.memory * mib, WorkspaceBytes: tt.ws * mib, TmpBytes: tt.tmp * mib})
		if ws != tt.wantWS*mib || tmp != tt.wantTmp*mib || home != tt.hom*mib {
			t.Errorf("%s: workspace %d MiB, tmp %d MiB, home %d MiB; want %d, %d, %d",
				tt.name, ws/mib, tmp/mib, home/mib, tt.wantWS, tt.wantTmp, tt.hom)
		}
		if reserve := tt.memory*mib - ws - tmp - home; reserve < tt.memory*mib/4 && reserve < 256*mib {
			t.Errorf("%s: %d MiB left for processes", tt.name, reserve/mib)
		}
	}
}
