package docker

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/drydockhq/drydock"
)

// fakeEngine answers the few calls List makes; its container list fails
// the first failures times as Podman 4.3 does while a container is removed.
func fakeEngine(t *testing.T, failures int) (host string, lists *atomic.Int32) {
	t.Helper()
	lists = new(atomic.Int32)
	sock := filepath.Join(t.TempDir(), "engine.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/_ping", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Api-Version", "1.41")
		w.Write([]byte("OK"))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/containers/json") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if n := lists.Add(1); int(n) <= failures {
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`{"cause":"no such container","message":"getting container from store \"4f1c\": container not known","response":500}`))
			return
		}
		w.Write([]byte(`[{"Id":"abc","Names":["/drydock-0123456789abcdef"],"Labels":{"drydock.managed":"true","drydock.job":"j"},"State":"running","Created":1}]`))
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "unix://" + sock, lists
}

func TestListRetriesAnEngineThatFailsWhileContainersGo(t *testing.T) {
	t.Parallel()
	host, lists := fakeEngine(t, listAttempts-1)
	rt, err := New(Options{Host: host, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	got, err := rt.List(t.Context(), nil)
	if err != nil {
		t.Fatalf("List after %d failed answers: %v", listAttempts-1, err)
	}
	if len(got) != 1 || got[0].ID != "drydock-0123456789abcdef" {
		t.Errorf("List = %v, want the one sandbox", got)
	}
	if n := lists.Load(); n != listAttempts {
		t.Errorf("%d list calls, want %d", n, listAttempts)
	}
}

func TestListGivesUpAfterAFewAttempts(t *testing.T) {
	t.Parallel()
	host, lists := fakeEngine(t, 1000)
	rt, err := New(Options{Host: host, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if _, err := rt.List(t.Context(), nil); err == nil || !strings.Contains(err.Error(), "container not known") {
		t.Errorf("List on an engine that always fails: %v; want its error", err)
	}
	if n := lists.Load(); n != listAttempts {
		t.Errorf("%d list calls, want %d", n, listAttempts)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	before := lists.Load()
	if _, err := rt.List(ctx, nil); err == nil {
		t.Error("List with a cancelled context succeeded")
	}
	if n := lists.Load() - before; n > 1 {
		t.Errorf("%d list calls with a cancelled context, want at most 1", n)
	}
}

// The bench's failure on the real engine: List while other containers are
// being removed. Bounded: 16 containers, each removed once.
func TestListWhileContainersAreRemoved(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s setup) {
		rt := s.newRuntime(t)
		label := "drydock.test.listrace"
		run := drydock.RandomHex(6)
		var ids []string
		for i := range 16 {
			res, err := rt.cli.ContainerCreate(t.Context(), client.ContainerCreateOptions{
				Name: "dd-listrace-" + run + "-" + string(rune('a'+i)),
				Config: &container.Config{Image: s.image, Entrypoint: []string{"/bin/sleep", "60"},
					Labels: map[string]string{drydock.LabelManaged: "true", label: run}},
				HostConfig: &container.HostConfig{NetworkMode: "none"},
			})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, res.ID)
			// Running, as sandboxes are: removing one takes a stop.
			if _, err := rt.cli.ContainerStart(t.Context(), res.ID, client.ContainerStartOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() {
			for _, id := range ids {
				rt.cli.ContainerRemove(context.Background(), id, client.ContainerRemoveOptions{Force: true})
			}
		})
		var removed atomic.Bool
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer removed.Store(true)
			var rm sync.WaitGroup
			for _, id := range ids {
				rm.Add(1)
				go func() {
					defer rm.Done()
					rt.cli.ContainerRemove(context.Background(), id, client.ContainerRemoveOptions{Force: true})
				}()
			}
			rm.Wait()
		}()
		lists, failed := 0, 0
		var firstErr error
		deadline := time.Now().Add(time.Minute)
		for !removed.Load() && lists < 2000 && time.Now().Before(deadline) {
			lists++
			if _, err := rt.List(t.Context(), nil); err != nil {
				failed++
				if firstErr == nil {
					firstErr = err
				}
			}
		}
		wg.Wait()
		t.Logf("%d lists while 16 containers were removed; %d failed", lists, failed)
		if failed > 0 {
			t.Errorf("%d of %d lists failed; first: %v", failed, lists, firstErr)
		}
	})
}
