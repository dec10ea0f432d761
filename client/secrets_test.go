package client_test

import (
	"slices"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client"
)

// JobSpec.Secrets goes to the server; what comes back names them only.
func TestScheduleWithSecrets(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, srv apiServer, c *client.Client) {
		const v = "sdk-canary-77c1e0b4"
		j, err := c.Schedule(t.Context(), drydock.JobSpec{Task: "t", Secrets: drydock.SecretValues{"GITHUB_TOKEN": v}})
		if err != nil {
			t.Fatal(err)
		}
		if srv.Job(t, j.ID).Secrets["GITHUB_TOKEN"] != v {
			t.Fatal("the server did not get the secret")
		}
		if j.Secrets != nil || !slices.Equal(j.SecretNames, []string{"GITHUB_TOKEN"}) {
			t.Fatalf("scheduled job: secrets %v, names %v", j.Secrets.Names(), j.SecretNames)
		}
		got, err := c.Job(t.Context(), j.ID)
		if err != nil || got.Secrets != nil || !slices.Equal(got.SecretNames, []string{"GITHUB_TOKEN"}) {
			t.Fatalf("Job: %v secrets %v names %v", err, got.Secrets.Names(), got.SecretNames)
		}
	})
}
