package sqlstore_test

import (
	"fmt"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/store/sqlstore"
)

// A store reads one row more than the page holds; Page keeps the page and
// turns the last id into the cursor the next request continues from.
func ExamplePage() {
	rows := []*drydock.Job{{ID: "job-3"}, {ID: "job-2"}, {ID: "job-1"}}
	page, next := sqlstore.Page(rows, 2)
	after, _ := sqlstore.DecodeCursor(next)
	fmt.Println(len(page), "jobs; the next page starts after", after)
	// Output: 2 jobs; the next page starts after job-2
}
