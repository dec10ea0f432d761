package api

import "time"

// SignLinkForTest signs a link as the server would, with any claims, so
// that tests can present links the API would not hand out.
func (s *Server) SignLinkForTest(job, scope string, expires time.Time, principal string, issued int64) string {
	return s.signLink(linkClaims{Job: job, Scope: scope, Expires: expires.Unix(), Principal: principal, Issued: issued})
}
