package docker

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestHardenPodmanProfile(t *testing.T) {
	t.Parallel()
	in := `{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[
		{"names":["read","keyctl","unshare","clone","clone3","setns","write"],"action":"SCMP_ACT_ALLOW","args":[],"includes":{},"excludes":{}},
		{"names":["setns","unshare"],"action":"SCMP_ACT_ALLOW","includes":{"caps":["CAP_SYS_ADMIN"]}},
		{"names":["personality"],"action":"SCMP_ACT_ALLOW","args":[{"index":0,"value":0,"op":"SCMP_CMP_EQ"}]}]}`
	out, err := hardenPodmanProfile([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		DefaultAction string `json:"defaultAction"`
		Syscalls      []struct {
			Names    []string         `json:"names"`
			Action   string           `json:"action"`
			Args     []map[string]any `json:"args"`
			Includes map[string]any   `json:"includes"`
			ErrnoRet int              `json:"errnoRet"`
		} `json:"syscalls"`
	}
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatal(err)
	}
	if p.DefaultAction != "SCMP_ACT_ERRNO" || len(p.Syscalls) != 5 {
		t.Fatalf("profile changed shape: %s", out)
	}
	if got := p.Syscalls[0].Names; !slices.Equal(got, []string{"read", "write"}) {
		t.Errorf("unconditional allow list %v; want the keyring and namespace calls gone", got)
	}
	if got := p.Syscalls[1].Names; !slices.Equal(got, []string{"setns", "unshare"}) {
		t.Errorf("a rule for CAP_SYS_ADMIN changed: %v", got)
	}
	clone, clone3 := p.Syscalls[3], p.Syscalls[4]
	if !slices.Equal(clone.Names, []string{"clone"}) || clone.Action != "SCMP_ACT_ALLOW" || len(clone.Args) != 1 ||
		clone.Args[0]["op"] != "SCMP_CMP_MASKED_EQ" || clone.Args[0]["value"] != float64(0x7E020000) {
		t.Errorf("clone rule %+v; want allowed without namespace flags", clone)
	}
	if !slices.Equal(clone3.Names, []string{"clone3"}) || clone3.Action != "SCMP_ACT_ERRNO" || clone3.ErrnoRet != 38 {
		t.Errorf("clone3 rule %+v; want ENOSYS", clone3)
	}
	if _, err := hardenPodmanProfile([]byte(`{"syscalls": 3}`)); err == nil {
		t.Error("a profile without a syscalls list was accepted")
	}
}
