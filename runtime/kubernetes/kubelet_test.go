package kubernetes

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

var (
	podsGVR    = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// Images the test kubelet treats specially: one it cannot pull, and one
// whose pods no node can take.
const (
	missingImage       = "registry.invalid/no-such-image:1"
	unschedulableImage = "registry.invalid/too-big:1"
)

// cluster is client-go's fake clientset with the parts of a cluster that
// the runtime relies on and the fake lacks: the API server's uid and
// creation time on create, graceful pod deletion (a deleted pod stays,
// marked, until its kubelet has stopped it), and a kubelet that starts
// pods. The kubelet works on the object tracker directly, below the API,
// so the clientset's recorded actions are the runtime's alone.
type cluster struct {
	cs      *fake.Clientset
	ns      string
	port    int32 // toolboxd's port, the same in every pod as in a cluster
	first   net.Listener
	nextIP  int
	mu      sync.Mutex
	servers map[string]*http.Server // by pod name
	done    chan struct{}
}

// newCluster starts the fake cluster; it stops when the test ends. Each
// pod gets its own loopback address (127.1.x.y) so that, as in a cluster,
// every sandbox has its own IP and all share one port.
func newCluster(t *testing.T, ns string) *cluster {
	t.Helper()
	first, err := net.Listen("tcp", "127.1.0.1:0")
	if err != nil {
		t.Skipf("cannot listen on 127.1.0.1 (the test gives each fake pod its own loopback address; Linux has the whole 127/8): %v", err)
	}
	c := &cluster{
		cs:      fake.NewClientset(),
		ns:      ns,
		port:    int32(first.Addr().(*net.TCPAddr).Port),
		first:   first,
		servers: map[string]*http.Server{},
		done:    make(chan struct{}),
	}
	c.cs.PrependReactor("create", "*", c.apiServerCreate)
	c.cs.PrependReactor("delete", "pods", c.gracefulDelete)
	w, err := c.cs.Tracker().Watch(podsGVR, ns)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go c.kubelet(ctx, t, w)
	t.Cleanup(func() {
		cancel()
		<-c.done
		w.Stop()
		c.mu.Lock()
		defer c.mu.Unlock()
		for name, s := range c.servers {
			s.Close()
			delete(c.servers, name)
		}
		if c.first != nil {
			c.first.Close()
		}
	})
	return c
}

// apiServerCreate fills in what the API server sets on every object, then
// lets the tracker store it.
func (c *cluster) apiServerCreate(action k8stesting.Action) (bool, runtime.Object, error) {
	obj := action.(k8stesting.CreateAction).GetObject()
	m, err := metaOf(obj)
	if err != nil {
		return true, nil, err
	}
	m.SetUID(types.UID(uuid.NewString()))
	m.SetCreationTimestamp(metav1.Now())
	return false, nil, nil
}

// gracefulDelete marks a pod for deletion, as the API server does, and
// leaves its removal to the kubelet; a delete with grace period zero (the
// kubelet's own) removes it.
func (c *cluster) gracefulDelete(action k8stesting.Action) (bool, runtime.Object, error) {
	da := action.(k8stesting.DeleteAction)
	if g := da.GetDeleteOptions().GracePeriodSeconds; g != nil && *g == 0 {
		return false, nil, nil
	}
	obj, err := c.cs.Tracker().Get(podsGVR, da.GetNamespace(), da.GetName())
	if err != nil {
		return true, nil, err
	}
	pod := obj.(*corev1.Pod).DeepCopy()
	if pod.DeletionTimestamp == nil {
		now := metav1.Now()
		pod.DeletionTimestamp = &now
		pod.DeletionGracePeriodSeconds = pod.Spec.TerminationGracePeriodSeconds
		if err := c.cs.Tracker().Update(podsGVR, pod, pod.Namespace); err != nil {
			return true, nil, err
		}
	}
	return true, pod, nil
}

// kubelet starts each new pod (a health server standing in for toolboxd,
// on the pod's address and with the token from its Secret), and stops and
// removes pods marked for deletion.
func (c *cluster) kubelet(ctx context.Context, t *testing.T, w watch.Interface) {
	defer close(c.done)
	for {
		var ev watch.Event
		select {
		case <-ctx.Done():
			return
		case ev = <-w.ResultChan():
		}
		pod, ok := ev.Object.(*corev1.Pod)
		if !ok {
			continue
		}
		switch {
		case ev.Type == watch.Added:
			c.start(t, pod.DeepCopy())
		case ev.Type == watch.Modified && pod.DeletionTimestamp != nil:
			c.stop(pod.Name)
			zero := int64(0)
			_ = c.cs.Tracker().Delete(podsGVR, pod.Namespace, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		case ev.Type == watch.Deleted:
			c.stop(pod.Name)
		}
	}
}

func (c *cluster) start(t *testing.T, pod *corev1.Pod) {
	ctr := pod.Spec.Containers[0]
	if ctr.Image == missingImage {
		pod.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
			Name: ctr.Name, Image: ctr.Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason: "ImagePullBackOff", Message: `Back-off pulling image "` + ctr.Image + `"`,
			}},
		}}}
		c.update(t, pod)
		return
	}
	if ctr.Image == unschedulableImage {
		pod.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
			Message: "0/3 nodes are available: 3 Insufficient memory.",
		}}}
		c.update(t, pod)
		return
	}
	env, err := c.resolveEnv(pod.Namespace, ctr.Env)
	if err != nil {
		pod.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
			Name: ctr.Name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: err.Error()}},
		}}}
		c.update(t, pod)
		return
	}
	ip, ln, err := c.listen(env["TOOLBOXD_LISTEN"])
	if err != nil {
		t.Errorf("kubelet: pod %s: %v", pod.Name, err)
		return
	}
	token := env["TOOLBOXD_TOKEN"]
	if f := env["TOOLBOXD_SECRETS_FILE"]; f != "" {
		// What the init container does: copy the boot file from the
		// Secret's volume into the emptyDir that toolboxd reads.
		if token, err = c.bootToken(pod, f); err != nil {
			pod.Status = corev1.PodStatus{Phase: corev1.PodFailed, Message: err.Error()}
			c.update(t, pod)
			return
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/health", func(w http.ResponseWriter, r *http.Request) {
		got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if token == "" || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			http.Error(w, "bad token", http.StatusUnauthorized)
			return
		}
		fmt.Fprintln(w, `{"status":"ok"}`)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	c.mu.Lock()
	c.servers[pod.Name] = srv
	c.mu.Unlock()
	go srv.Serve(ln)

	now := metav1.Now()
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, StartTime: &now,
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: ctr.Name, Image: ctr.Image, Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		}},
	}
	c.update(t, pod)
}

// bootToken plays the pod's init containers: one must copy a key of a Secret
// volume it mounts to the file the main container's toolboxd is told to read.
func (c *cluster) bootToken(pod *corev1.Pod, file string) (string, error) {
	secretOf := map[string]*corev1.SecretVolumeSource{}
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil {
			secretOf[v.Name] = v.Secret
		}
	}
	for _, ic := range pod.Spec.InitContainers {
		if len(ic.Command) != 3 || ic.Command[0] != "cp" || ic.Command[2] != file {
			continue
		}
		for _, m := range ic.VolumeMounts {
			src, ok := secretOf[m.Name]
			if !ok || !strings.HasPrefix(ic.Command[1], m.MountPath+"/") {
				continue
			}
			key := strings.TrimPrefix(ic.Command[1], m.MountPath+"/")
			for _, it := range src.Items {
				if it.Path == key {
					key = it.Key
				}
			}
			obj, err := c.cs.Tracker().Get(secretsGVR, pod.Namespace, src.SecretName)
			if err != nil {
				return "", fmt.Errorf("secret %q not found", src.SecretName)
			}
			var boot struct {
				Token string `json:"token"`
			}
			if err := json.Unmarshal(obj.(*corev1.Secret).Data[key], &boot); err != nil {
				return "", fmt.Errorf("boot secrets: %w", err)
			}
			return boot.Token, nil
		}
	}
	return "", fmt.Errorf("no init container puts %s in place", file)
}

// resolveEnv does what the kubelet does with env: values, and values from
// Secrets, which must exist.
func (c *cluster) resolveEnv(ns string, vars []corev1.EnvVar) (map[string]string, error) {
	env := map[string]string{}
	for _, v := range vars {
		switch {
		case v.ValueFrom == nil:
			env[v.Name] = v.Value
		case v.ValueFrom.SecretKeyRef != nil:
			ref := v.ValueFrom.SecretKeyRef
			obj, err := c.cs.Tracker().Get(secretsGVR, ns, ref.Name)
			if err != nil {
				return nil, fmt.Errorf("secret %q not found", ref.Name)
			}
			val, ok := obj.(*corev1.Secret).Data[ref.Key]
			if !ok {
				return nil, fmt.Errorf("couldn't find key %s in Secret %s/%s", ref.Key, ns, ref.Name)
			}
			env[v.Name] = string(val)
		default:
			return nil, fmt.Errorf("env %s: unsupported source", v.Name)
		}
	}
	return env, nil
}

// listen binds the pod's next loopback address on the port toolboxd was
// told to listen on.
func (c *cluster) listen(listen string) (string, net.Listener, error) {
	addr, ok := strings.CutPrefix(listen, "tcp://0.0.0.0:")
	if !ok || addr != fmt.Sprint(c.port) {
		return "", nil, fmt.Errorf("TOOLBOXD_LISTEN = %q, want tcp://0.0.0.0:%d", listen, c.port)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nextIP
	c.nextIP++
	ip := fmt.Sprintf("127.1.%d.%d", n/250, n%250+1)
	if n == 0 {
		ln := c.first
		c.first = nil
		return ip, ln, nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, addr))
	return ip, ln, err
}

func (c *cluster) stop(name string) {
	c.mu.Lock()
	srv := c.servers[name]
	delete(c.servers, name)
	c.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

func (c *cluster) update(t *testing.T, pod *corev1.Pod) {
	if err := c.cs.Tracker().Update(podsGVR, pod, pod.Namespace); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("kubelet: update pod %s: %v", pod.Name, err)
	}
}

func metaOf(obj runtime.Object) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", obj)
	}
	return m, nil
}
