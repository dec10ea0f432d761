package secretbox_test

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/secretbox"
)

func Example() {
	box, _ := secretbox.New(secretbox.GenerateKey()) // in a server: LoadOrCreateKey

	sealed, _ := box.Seal("job-1", drydock.SecretValues{"GITHUB_TOKEN": "ghp_example_value"})
	secrets, _ := box.Open("job-1", sealed)
	fmt.Println(secrets) // names only

	out := secretbox.NewReader(strings.NewReader("token: ghp_example_value\n"), secrets.Values())
	io.Copy(os.Stdout, out)
	// Output:
	// secrets[GITHUB_TOKEN]
	// token: *****************
}
