package image_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/image"
)

// Build the desktop image with a toolboxd built by
// `CGO_ENABLED=0 go build -o toolboxd ./cmd/toolboxd`, showing progress.
func ExampleBuild() {
	ref, err := image.Build(context.Background(), image.Options{
		Profile:  drydock.ProfileDesktop,
		Toolboxd: "./toolboxd",
		Progress: os.Stderr,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ref) // drydock-sandbox:desktop-<hash>, also tagged drydock-sandbox:desktop
}
