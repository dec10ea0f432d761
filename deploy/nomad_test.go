package deploy

import (
	"os"
	"slices"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// The Nomad job parses as HCL and has the shape the comments promise. This
// is a syntax and structure check only: Nomad's own validation needs Nomad.
func TestNomadJob(t *testing.T) {
	t.Parallel()
	const path = "nomad/drydock.nomad.hcl"
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, diags := hclsyntax.ParseConfig(src, path, hcl.Pos{Line: 1, Column: 1})
	if diags.HasErrors() {
		t.Fatalf("%s: %v", path, diags)
	}
	body := f.Body.(*hclsyntax.Body)
	job := block(t, body, "job", "drydock")
	if got := literal(t, job.Body, "type"); got.AsString() != "service" {
		t.Errorf("job type %s, want service", got.AsString())
	}
	replicas := block(t, body, "variable", "replicas")
	if n := literal(t, replicas.Body, "default"); !n.Equals(cty.NumberIntVal(2)).True() {
		t.Errorf("replicas default %v, want 2", n.GoString())
	}
	group := block(t, job.Body, "group", "orchestrator")
	task := block(t, group.Body, "task", "server")
	if got := literal(t, task.Body, "driver"); got.AsString() != "docker" {
		t.Errorf("driver %s, want docker", got.AsString())
	}
	cfg := block(t, task.Body, "config")
	var args []string
	for _, v := range literal(t, cfg.Body, "args").AsValueSlice() {
		args = append(args, v.AsString())
	}
	for _, want := range []string{"server", "--runtime=docker", "--listen=0.0.0.0:8080"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %v lack %s", args, want)
		}
	}
	var checks []string
	for _, b := range block(t, group.Body, "service").Body.Blocks {
		if b.Type == "check" {
			checks = append(checks, literal(t, b.Body, "path").AsString())
		}
	}
	if !slices.Equal(checks, []string{"/healthz", "/readyz"}) {
		t.Errorf("service checks %v, want /healthz and /readyz", checks)
	}
	tmpl := block(t, task.Body, "template")
	if !literal(t, tmpl.Body, "env").True() {
		t.Error("the secrets template does not become the environment")
	}
}

func block(t *testing.T, body *hclsyntax.Body, typ string, labels ...string) *hclsyntax.Block {
	t.Helper()
	for _, b := range body.Blocks {
		if b.Type == typ && slices.Equal(b.Labels, labels) {
			return b
		}
	}
	t.Fatalf("no %s block %v", typ, labels)
	return nil
}

// literal evaluates an attribute that needs no variables.
func literal(t *testing.T, body *hclsyntax.Body, name string) cty.Value {
	t.Helper()
	a, ok := body.Attributes[name]
	if !ok {
		t.Fatalf("no attribute %s", name)
	}
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		t.Fatalf("attribute %s: %v", name, diags)
	}
	return v
}
