package api

import (
	"sync"

	"github.com/drydockhq/drydock"
)

// Default bounds of long-lived connections (event streams and live-view
// WebSockets). Each holds a goroutine, a socket and a store poll, so one
// token must not be able to open them without end.
const (
	DefaultMaxStreamsPerUser = 64
	DefaultMaxStreams        = 2048
)

// streamLimit counts open long-lived connections per user and in total.
type streamLimit struct {
	perUser, total int

	mu    sync.Mutex
	open  int
	users map[string]int
}

func newStreamLimit(perUser, total int) *streamLimit {
	if perUser <= 0 {
		perUser = DefaultMaxStreamsPerUser
	}
	if total <= 0 {
		total = DefaultMaxStreams
	}
	return &streamLimit{perUser: perUser, total: total, users: map[string]int{}}
}

// acquire takes a slot for user (the caller's token id, or for a signed
// link the token it was made for; "local" in development mode); the caller
// must call release once the connection ends. It fails with a 429 error when the user or the server
// is at its limit.
func (l *streamLimit) acquire(user string) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.users[user] >= l.perUser:
		return nil, drydock.Errorf(drydock.ETOOMANY, "%d event streams and live views are open for this user, the most allowed; close one first", l.perUser)
	case l.open >= l.total:
		return nil, drydock.Errorf(drydock.ETOOMANY, "the server has %d event streams and live views open, the most it allows; try again later", l.total)
	}
	l.open++
	l.users[user]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.open--
			if l.users[user]--; l.users[user] <= 0 {
				delete(l.users, user)
			}
		})
	}, nil
}
