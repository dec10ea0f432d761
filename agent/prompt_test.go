package agent

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/image"
)

// promptNames says how the system prompt names each Debian package of the
// sandbox image; "" is plumbing the model need not be told about. A package
// added to image/packages/*.txt fails this test until it is listed here (and
// said in the prompt if the model would use it).
var promptNames = map[string]string{
	"bash":                   "",
	"build-essential":        "build-essential",
	"ca-certificates":        "",
	"curl":                   "curl",
	"git":                    "git",
	"less":                   "",
	"procps":                 "",
	"python3":                "python3",
	"python3-ipykernel":      "ipykernel",
	"python3-jupyter-client": "",
	"python3-jupyter-server": "Jupyter",
	"python3-matplotlib":     "matplotlib",
	"python3-nbclassic":      "Jupyter",
	"python3-pip":            "pip",
	"python3-tk":             "Tk (tkinter)",
	"python3-venv":           "venv",
	"unzip":                  "unzip",
	"xz-utils":               "xz",
	"zip":                    "zip",
	// desktop
	"chromium":          "chromium",
	"fluxbox":           "window manager",
	"fonts-dejavu-core": "",
	"imagemagick":       "ImageMagick",
	"libnss3-tools":     "",
	"scrot":             "scrot",
	"x11-apps":          "",
	"x11-utils":         "",
	"x11vnc":            "",
	"xdotool":           "xdotool",
	"xterm":             "xterm",
	"xvfb":              "X display",
}

// The system prompt says exactly what the image carries: every package of
// the profile's image that a model would use is named, nothing of the
// desktop is promised to a headless sandbox, and the versions of Node.js and
// TypeScript are the ones the image pins.
func TestPromptSaysWhatTheImageHas(t *testing.T) {
	t.Parallel()
	headless := image.Packages(drydock.ProfileHeadless)
	for _, profile := range []drydock.Profile{drydock.ProfileHeadless, drydock.ProfileDesktop} {
		prompt := systemPrompt(env{Workspace: "/workspace", Desktop: profile == drydock.ProfileDesktop, Images: true, Now: time.Now()})
		for _, pkg := range image.Packages(profile) {
			name, ok := promptNames[pkg]
			if !ok {
				t.Errorf("image package %s is not in promptNames: add it, and name it in the system prompt if a model would use it", pkg)
				continue
			}
			if name != "" && !strings.Contains(prompt, name) {
				t.Errorf("%s prompt does not mention %s (package %s)", profile, name, pkg)
			}
		}
		if profile == drydock.ProfileHeadless {
			for pkg, name := range promptNames {
				if name != "" && !slices.Contains(headless, pkg) && strings.Contains(prompt, name) {
					t.Errorf("headless prompt mentions %q, but package %s is only in the desktop image", name, pkg)
				}
			}
		}
		pkgs, err := image.NPMPackages("amd64")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pkgs {
			major, _, _ := strings.Cut(p.Version, ".")
			var want string
			switch {
			case strings.HasPrefix(p.Name, "node-linux-"):
				want = "Node.js " + major + " with npm and npx"
			case p.Name == "typescript":
				want = "TypeScript " + major + " (tsc)"
			case p.Name == "npm":
				want = "npm"
			case p.Name == "@types/node":
				want = "@types/node, in typeRoots /usr/local/lib/node_modules/@types"
			case p.Name == "undici-types":
				continue // a dependency of @types/node
			default:
				t.Errorf("npm package %s: say in the prompt what it is, and check it here", p.Name)
				continue
			}
			if !strings.Contains(prompt, want) {
				t.Errorf("%s prompt does not say %q (the image has %s %s)", profile, want, p.Name, p.Version)
			}
		}
	}
	// Nothing listed that the image no longer has.
	desktop := image.Packages(drydock.ProfileDesktop)
	for pkg := range promptNames {
		if !slices.Contains(desktop, pkg) {
			t.Errorf("promptNames lists %s, which no image has any more", pkg)
		}
	}
}

// Claude's built-in bash tool comes with Anthropic's description, not the
// tool's: the prompt says what is Drydock's own (timeout, waiting).
func TestPromptSaysHowBashWaits(t *testing.T) {
	p := systemPrompt(env{Workspace: "/workspace", BashTimeout: 300 * time.Second})
	for _, s := range []string{"interrupted after 300 seconds", `"timeout"`, "empty command to wait"} {
		if !strings.Contains(p, s) {
			t.Errorf("prompt lacks %q", s)
		}
	}
	if !strings.Contains(systemPrompt(env{Workspace: "/workspace"}), "after 120 seconds") {
		t.Errorf("prompt without a configured timeout does not say the default")
	}
}
