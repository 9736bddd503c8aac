package hostpath

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// TopologyKey is the node label key of the volumes' topology: a volume lives on one node.
const TopologyKey = "topology.hostpath.csi/node"

// Driver implements the CSI Identity, Controller and Node services over a Store.
type Driver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedNodeServer

	Name    string
	Version string
	NodeID  string
	Store   *Store
	// MaxVolumesPerNode is reported by NodeGetInfo (0: no limit).
	MaxVolumesPerNode int64
}

func grpcErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, ErrConflict):
		return status.Error(codes.AlreadyExists, err.Error())
	default:
		return status.Error(codes.Internal, err.Error())
	}
}

// ---- Identity ----

func (d *Driver) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: d.Name, VendorVersion: d.Version}, nil
}

func (d *Driver) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	svc := func(t csi.PluginCapability_Service_Type) *csi.PluginCapability {
		return &csi.PluginCapability{Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: t}}}
	}
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{
		svc(csi.PluginCapability_Service_CONTROLLER_SERVICE),
		svc(csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS),
	}}, nil
}

func (d *Driver) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

// ---- Controller ----

func (d *Driver) topology() []*csi.Topology {
	return []*csi.Topology{{Segments: map[string]string{TopologyKey: d.NodeID}}}
}

// checkCapabilities accepts filesystem volumes used from one node (hostpath volumes cannot be shared).
func checkCapabilities(caps []*csi.VolumeCapability) error {
	if len(caps) == 0 {
		return status.Error(codes.InvalidArgument, "volume capabilities are required")
	}
	for _, c := range caps {
		if c.GetBlock() != nil {
			return status.Error(codes.InvalidArgument, "block volumes are not supported: filesystem only")
		}
		if c.GetMount() == nil {
			return status.Error(codes.InvalidArgument, "access type mount is required")
		}
		switch c.GetAccessMode().GetMode() {
		case csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY,
			csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER, csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER:
		default:
			return status.Errorf(codes.InvalidArgument, "access mode %v is not supported: volumes live on one node", c.GetAccessMode().GetMode())
		}
	}
	return nil
}

func (d *Driver) checkTopology(req *csi.CreateVolumeRequest) error {
	tr := req.GetAccessibilityRequirements()
	if tr == nil || (len(tr.GetRequisite()) == 0 && len(tr.GetPreferred()) == 0) {
		return nil
	}
	for _, t := range append(tr.GetRequisite(), tr.GetPreferred()...) {
		if t.GetSegments()[TopologyKey] == d.NodeID {
			return nil
		}
	}
	return status.Errorf(codes.ResourceExhausted, "node %s is not among the requested topologies", d.NodeID)
}

func (d *Driver) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name is required")
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return nil, err
	}
	if err := d.checkTopology(req); err != nil {
		return nil, err
	}
	capacity := req.GetCapacityRange().GetRequiredBytes()
	if limit := req.GetCapacityRange().GetLimitBytes(); limit > 0 && capacity > limit {
		return nil, status.Error(codes.OutOfRange, "required bytes exceed the limit")
	}
	var kind, sourceID string
	var fill func(string) error
	src := req.GetVolumeContentSource()
	if s := src.GetSnapshot(); s != nil {
		kind, sourceID = "snapshot", s.GetSnapshotId()
		snap, err := d.Store.GetSnapshot(sourceID)
		if err != nil {
			return nil, grpcErr(fmt.Errorf("snapshot %s: %w", sourceID, err))
		}
		if capacity < snap.SizeBytes {
			capacity = snap.SizeBytes
		}
		fill = func(dir string) error { return d.Store.RestoreSnapshot(sourceID, dir) }
	} else if v := src.GetVolume(); v != nil {
		kind, sourceID = "volume", v.GetVolumeId()
		if _, err := d.Store.GetVolume(sourceID); err != nil {
			return nil, grpcErr(fmt.Errorf("volume %s: %w", sourceID, err))
		}
		fill = func(dir string) error { return d.Store.CloneVolume(sourceID, dir) }
	}
	m, err := d.Store.CreateVolume(req.GetName(), capacity, d.NodeID, kind, sourceID, fill)
	if err != nil {
		return nil, grpcErr(err)
	}
	log.Printf("CreateVolume %s: %s (%d bytes, source %s %s)", req.GetName(), m.ID, m.CapacityBytes, kind, sourceID)
	return &csi.CreateVolumeResponse{Volume: &csi.Volume{
		VolumeId:           m.ID,
		CapacityBytes:      m.CapacityBytes,
		VolumeContext:      map[string]string{},
		ContentSource:      src,
		AccessibleTopology: d.topology(),
	}}, nil
}

func (d *Driver) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume id is required")
	}
	if err := d.Store.DeleteVolume(req.GetVolumeId()); err != nil {
		return nil, grpcErr(err)
	}
	log.Printf("DeleteVolume %s", req.GetVolumeId())
	return &csi.DeleteVolumeResponse{}, nil
}

func (d *Driver) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume id is required")
	}
	if _, err := d.Store.GetVolume(req.GetVolumeId()); err != nil {
		return nil, grpcErr(err)
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext: req.GetVolumeContext(), VolumeCapabilities: req.GetVolumeCapabilities(), Parameters: req.GetParameters(),
	}}, nil
}

func (d *Driver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	var caps []*csi.ControllerServiceCapability
	for _, t := range []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT,
		csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS,
		csi.ControllerServiceCapability_RPC_CLONE_VOLUME,
	} {
		caps = append(caps, &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: t}}})
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}

func snapshotOf(m SnapshotMeta) *csi.Snapshot {
	return &csi.Snapshot{
		SnapshotId: m.ID, SourceVolumeId: m.SourceVolumeID, SizeBytes: m.SizeBytes,
		CreationTime: timestamppb.New(m.CreatedAt), ReadyToUse: true,
	}
}

func (d *Driver) CreateSnapshot(_ context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	if req.GetName() == "" || req.GetSourceVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "name and source volume id are required")
	}
	m, err := d.Store.CreateSnapshot(req.GetName(), req.GetSourceVolumeId())
	if err != nil {
		return nil, grpcErr(err)
	}
	log.Printf("CreateSnapshot %s of %s: %s (%d bytes)", req.GetName(), m.SourceVolumeID, m.ID, m.SizeBytes)
	return &csi.CreateSnapshotResponse{Snapshot: snapshotOf(m)}, nil
}

func (d *Driver) DeleteSnapshot(_ context.Context, req *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	if req.GetSnapshotId() == "" {
		return nil, status.Error(codes.InvalidArgument, "snapshot id is required")
	}
	if err := d.Store.DeleteSnapshot(req.GetSnapshotId()); err != nil {
		return nil, grpcErr(err)
	}
	log.Printf("DeleteSnapshot %s", req.GetSnapshotId())
	return &csi.DeleteSnapshotResponse{}, nil
}

func (d *Driver) ListSnapshots(_ context.Context, req *csi.ListSnapshotsRequest) (*csi.ListSnapshotsResponse, error) {
	all, err := d.Store.ListSnapshots()
	if err != nil {
		return nil, grpcErr(err)
	}
	var matched []SnapshotMeta
	for _, m := range all {
		if id := req.GetSnapshotId(); id != "" && m.ID != id {
			continue
		}
		if v := req.GetSourceVolumeId(); v != "" && m.SourceVolumeID != v {
			continue
		}
		matched = append(matched, m)
	}
	start := 0
	if t := req.GetStartingToken(); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 || n > len(matched) {
			return nil, status.Errorf(codes.Aborted, "invalid starting token %q", t)
		}
		start = n
	}
	end := len(matched)
	if max := int(req.GetMaxEntries()); max > 0 && start+max < end {
		end = start + max
	}
	resp := &csi.ListSnapshotsResponse{}
	for _, m := range matched[start:end] {
		resp.Entries = append(resp.Entries, &csi.ListSnapshotsResponse_Entry{Snapshot: snapshotOf(m)})
	}
	if end < len(matched) {
		resp.NextToken = strconv.Itoa(end)
	}
	return resp, nil
}

// ---- Node ----

func (d *Driver) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{
		NodeId:             d.NodeID,
		MaxVolumesPerNode:  d.MaxVolumesPerNode,
		AccessibleTopology: d.topology()[0],
	}, nil
}

func (d *Driver) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{Capabilities: []*csi.NodeServiceCapability{{
		Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: csi.NodeServiceCapability_RPC_GET_VOLUME_STATS}},
	}}}, nil
}

func (d *Driver) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	id, target := req.GetVolumeId(), req.GetTargetPath()
	if id == "" || target == "" {
		return nil, status.Error(codes.InvalidArgument, "volume id and target path are required")
	}
	if req.GetVolumeCapability() == nil {
		return nil, status.Error(codes.InvalidArgument, "volume capability is required")
	}
	if err := checkCapabilities([]*csi.VolumeCapability{req.GetVolumeCapability()}); err != nil {
		return nil, err
	}
	if _, err := d.Store.GetVolume(id); err != nil {
		return nil, grpcErr(fmt.Errorf("volume %s: %w", id, err))
	}
	mounted, err := isMountPoint(target)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if mounted {
		return &csi.NodePublishVolumeResponse{}, nil
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := syscall.Mount(d.Store.VolumePath(id), target, "", syscall.MS_BIND, ""); err != nil {
		return nil, status.Errorf(codes.Internal, "bind mount of %s on %s: %v", id, target, err)
	}
	if req.GetReadonly() {
		if err := syscall.Mount("", target, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			_ = syscall.Unmount(target, 0)
			return nil, status.Errorf(codes.Internal, "read-only remount of %s: %v", target, err)
		}
	}
	log.Printf("NodePublishVolume %s on %s (read-only %v)", id, target, req.GetReadonly())
	return &csi.NodePublishVolumeResponse{}, nil
}

func (d *Driver) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	id, target := req.GetVolumeId(), req.GetTargetPath()
	if id == "" || target == "" {
		return nil, status.Error(codes.InvalidArgument, "volume id and target path are required")
	}
	for i := 0; i < 8; i++ { // stacked mounts, if a publish was repeated by someone else
		mounted, err := isMountPoint(target)
		if err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		if !mounted {
			break
		}
		if err := syscall.Unmount(target, 0); err != nil {
			return nil, status.Errorf(codes.Internal, "unmount %s: %v", target, err)
		}
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, status.Error(codes.Internal, err.Error())
	}
	log.Printf("NodeUnpublishVolume %s from %s", id, target)
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

func (d *Driver) NodeGetVolumeStats(_ context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	if req.GetVolumeId() == "" || req.GetVolumePath() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume id and path are required")
	}
	if _, err := d.Store.GetVolume(req.GetVolumeId()); err != nil {
		return nil, grpcErr(err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(req.GetVolumePath(), &st); err != nil {
		if errors.Is(err, syscall.ENOENT) {
			return nil, status.Errorf(codes.NotFound, "volume path %s: %v", req.GetVolumePath(), err)
		}
		return nil, status.Error(codes.Internal, err.Error())
	}
	bs := int64(st.Bsize)
	return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{
		{Unit: csi.VolumeUsage_BYTES, Total: int64(st.Blocks) * bs, Available: int64(st.Bavail) * bs, Used: int64(st.Blocks-st.Bfree) * bs},
		{Unit: csi.VolumeUsage_INODES, Total: int64(st.Files), Available: int64(st.Ffree), Used: int64(st.Files - st.Ffree)},
	}}, nil
}

// isMountPoint tells whether path is the mount point of a mount in this process's mount namespace.
func isMountPoint(path string) (bool, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && unescapeMount(f[4]) == path {
			return true, nil
		}
	}
	return false, nil
}

// unescapeMount undoes the octal escapes (\040 for a space, ...) of /proc/self/mountinfo.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
