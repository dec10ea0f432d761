package egress

import "context"

// Updater is implemented by runtimes that enforce a sandbox's egress
// themselves (runtime/kubernetes, with a NetworkPolicy) rather than through
// this proxy; the orchestrator checks for it with a type assertion and
// calls it when a job's list changes and when a job takes a sandbox over.
type Updater interface {
	UpdateEgress(ctx context.Context, sandboxID string, egress []string) error
}
