package api

import (
	"fmt"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/secretbox"
)

// sealSecrets replaces a new job's secrets with their sealed form and their
// names: the plain values go no further than this.
func (s *Server) sealSecrets(job *drydock.Job) error {
	if len(job.Secrets) == 0 {
		job.Secrets = nil
		return nil
	}
	if s.cfg.Secrets == nil {
		return drydock.Errorf(drydock.EINVALID, "this server takes no secrets: it has no secrets key; start it with --secrets-key-file (every replica with the same key)")
	}
	sealed, err := s.cfg.Secrets.Seal(job.ID, job.Secrets)
	if err != nil {
		return fmt.Errorf("seal secrets of job %s: %w", job.ID, err)
	}
	job.SecretNames, job.SealedSecrets = job.Secrets.Names(), sealed
	job.Secrets = nil
	return nil
}

// secretValues opens a running job's secrets, whose values its live files
// must not show. When they cannot be opened, the files are not shown:
// masking fails closed.
func (s *Server) secretValues(job *drydock.Job) ([]string, error) {
	if len(job.SealedSecrets) == 0 {
		return nil, nil
	}
	var err error
	if s.cfg.Secrets != nil {
		var vals drydock.SecretValues
		if vals, err = s.cfg.Secrets.Open(job.ID, job.SealedSecrets); err == nil {
			return vals.Values(), nil
		}
		s.log.Warn("open a job's secrets to mask its files", "job_id", job.ID, "err", err)
	}
	return nil, drydock.Errorf(drydock.EUNAVAILABLE, "job %s has secrets this server cannot open (its secrets key differs), so it cannot mask them; its files are shown once the job has ended and its workspace is archived", job.ID)
}

// maskNames hides secret values in the names of a live listing.
func maskNames(es []FileInfo, values []string) {
	if len(values) == 0 {
		return
	}
	for i := range es {
		es[i].Name = secretbox.MaskString(es[i].Name, values)
		es[i].Path = secretbox.MaskString(es[i].Path, values)
		es[i].LinkTarget = secretbox.MaskString(es[i].LinkTarget, values)
	}
}
