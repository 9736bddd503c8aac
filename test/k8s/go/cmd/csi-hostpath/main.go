// csi-hostpath serves the hostpath CSI driver (package hostpath) on a unix socket, and registers it with the
// kubelet through the plugin registration socket (the job of a node-driver-registrar sidecar elsewhere).
//
//	csi-hostpath --endpoint /csi/csi.sock --node-id $NODE_NAME --state-dir /csi-data-dir \
//	  --registration-dir /registration --kubelet-endpoint /var/lib/kubelet/plugins/<driver>/csi.sock
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"eventdb.local/k8s-tools/hostpath"
)

var version = "dev"

func listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return net.Listen("unix", path)
}

func logCalls(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err != nil {
		log.Printf("%s failed: %v", info.FullMethod, err)
	}
	return resp, err
}

// registration answers the kubelet's plugin watcher.
type registration struct {
	registerapi.UnimplementedRegistrationServer
	name, endpoint string
	failed         chan<- error
}

func (r *registration) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: r.name, Endpoint: r.endpoint, SupportedVersions: []string{"1.0.0"}}, nil
}

func (r *registration) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if !s.PluginRegistered {
		log.Printf("the kubelet refused the registration: %s", s.Error)
		r.failed <- fmt.Errorf("registration refused: %s", s.Error)
	} else {
		log.Printf("registered with the kubelet as %s", r.name)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

func main() {
	name := flag.String("driver-name", "hostpath.csi.eventdb.local", "CSI driver name")
	endpoint := flag.String("endpoint", "/csi/csi.sock", "unix socket the CSI services listen on")
	nodeID := flag.String("node-id", os.Getenv("NODE_NAME"), "this node's name")
	stateDir := flag.String("state-dir", "/csi-data-dir", "directory of the volumes (and of the snapshots, unless --snapshot-dir)")
	snapshotDir := flag.String("snapshot-dir", "", "directory of the snapshots, possibly shared by every node (default <state-dir>/snapshots)")
	regDir := flag.String("registration-dir", "", "kubelet plugin registration directory (empty: do not register)")
	kubeletEndpoint := flag.String("kubelet-endpoint", "", "the CSI socket's path as the kubelet sees it")
	maxVolumes := flag.Int64("max-volumes-per-node", 0, "volumes per node (0: no limit)")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds | log.LUTC)
	if *nodeID == "" {
		log.Fatal("--node-id (or NODE_NAME) is required")
	}
	store, err := hostpath.NewStore(*stateDir, *snapshotDir)
	if err != nil {
		log.Fatalf("state directory %s: %v", *stateDir, err)
	}
	drv := &hostpath.Driver{Name: *name, Version: version, NodeID: *nodeID, Store: store, MaxVolumesPerNode: *maxVolumes}

	lis, err := listen(*endpoint)
	if err != nil {
		log.Fatalf("listen %s: %v", *endpoint, err)
	}
	// the sidecars run as a non-root user; the socket's directory (a hostPath only the driver's pod mounts)
	// is what guards it
	if err := os.Chmod(*endpoint, 0o666); err != nil {
		log.Fatalf("chmod %s: %v", *endpoint, err)
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(logCalls))
	csi.RegisterIdentityServer(srv, drv)
	csi.RegisterControllerServer(srv, drv)
	csi.RegisterNodeServer(srv, drv)
	failed := make(chan error, 2)
	go func() { failed <- srv.Serve(lis) }()
	log.Printf("%s %s serving CSI on %s for node %s (state in %s)", *name, version, *endpoint, *nodeID, *stateDir)

	var reg *grpc.Server
	if *regDir != "" {
		ep := *kubeletEndpoint
		if ep == "" {
			ep = *endpoint
		}
		sock := filepath.Join(*regDir, *name+"-reg.sock")
		rl, err := listen(sock)
		if err != nil {
			log.Fatalf("listen %s: %v", sock, err)
		}
		reg = grpc.NewServer()
		registerapi.RegisterRegistrationServer(reg, &registration{name: *name, endpoint: ep, failed: failed})
		go func() { failed <- reg.Serve(rl) }()
		log.Printf("registration socket %s (kubelet endpoint %s)", sock, ep)
	}

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	select {
	case s := <-sigs:
		log.Printf("stopping on %v", s)
	case err := <-failed:
		log.Printf("stopping: %v", err)
		defer os.Exit(1)
	}
	if reg != nil {
		reg.Stop()
	}
	srv.GracefulStop()
}
