package termtext_test

import (
	"fmt"

	"github.com/drydockhq/drydock/termtext"
)

func Example() {
	// A job's summary, written by the model in a sandbox: it clears the
	// screen and hides a word behind a carriage return.
	summary := "\x1b[2JAll tests pass\rFAILED"
	fmt.Println(termtext.Line(summary))
	// Output: ^[[2JAll tests pass^MFAILED
}
