package storetest

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/drydockhq/drydock"
)

// BenchCreateJobOnce measures a create under an idempotency key beside a
// plain create on the same store, so that the key's cost reads off the
// difference: "new key" is a first request, "replay" a retry that finds the
// job its key made.
func BenchCreateJobOnce(b *testing.B, s drydock.Store) {
	ctx := context.Background()
	newJob := func() *drydock.Job {
		return &drydock.Job{ID: uuid.Must(uuid.NewV7()).String(), OwnerID: "u", CreatedAt: time.Now(), Status: drydock.StatusPending,
			JobSpec: drydock.JobSpec{Task: "bench", Profile: drydock.ProfileHeadless}}
	}
	key := func(k string) drydock.IdempotencyKey {
		fp := sha256.Sum256([]byte(k))
		return drydock.IdempotencyKey{Key: k, Fingerprint: fp[:], TTL: time.Hour}
	}
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			if err := s.CreateJob(ctx, newJob()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("new_key", func(b *testing.B) {
		for b.Loop() {
			if _, created, err := s.CreateJobOnce(ctx, newJob(), key(uuid.NewString())); err != nil || !created {
				b.Fatalf("created %v, %v", created, err)
			}
		}
	})
	b.Run("replay", func(b *testing.B) {
		k := key(uuid.NewString())
		if _, _, err := s.CreateJobOnce(ctx, newJob(), k); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, created, err := s.CreateJobOnce(ctx, newJob(), k); err != nil || created {
				b.Fatalf("created %v, %v", created, err)
			}
		}
	})
}
