// Package hostpath is a CSI driver whose volumes are directories on the node and whose snapshots are tar
// archives of those directories: enough for PersistentVolumes, VolumeSnapshots and restores on a test cluster.
//
// State lives under one directory on the node (a hostPath volume of the driver's pod):
//
//	<root>/volumes/<id>/        the volume's files
//	<root>/volumes/<id>.json    its metadata
//	<snapshots>/<id>.tar        a snapshot: tar of the volume's files (modes, owners, times kept)
//	<snapshots>/<id>.json       its metadata
//
// The snapshots' directory may be shared by every node (the kind cluster mounts one host directory into all of
// them): a volume lives on one node, its snapshots can be restored on any.
//
// Identifiers derive from the names the external sidecars pass (the PV and VolumeSnapshotContent names), so a
// repeated CreateVolume or CreateSnapshot finds what an earlier call made: the calls are idempotent.
package hostpath

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// VolumeMeta describes one volume.
type VolumeMeta struct {
	ID            string    `json:"id"`
	Name          string    `json:"name"`
	CapacityBytes int64     `json:"capacityBytes"`
	NodeID        string    `json:"nodeId"`
	SourceKind    string    `json:"sourceKind,omitempty"` // "", "snapshot" or "volume"
	SourceID      string    `json:"sourceId,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
}

// SnapshotMeta describes one snapshot.
type SnapshotMeta struct {
	ID             string    `json:"id"`
	Name           string    `json:"name"`
	SourceVolumeID string    `json:"sourceVolumeId"`
	SizeBytes      int64     `json:"sizeBytes"`
	CreatedAt      time.Time `json:"createdAt"`
}

// ErrNotFound and ErrConflict map to gRPC NotFound and AlreadyExists.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("already exists with different parameters")
)

// Store keeps volumes and snapshots under one root directory. Its methods are safe for concurrent use.
type Store struct {
	root      string
	snapshots string
	mu        sync.Mutex
}

// NewStore creates the directories; snapshots "" means <root>/snapshots.
func NewStore(root, snapshots string) (*Store, error) {
	if snapshots == "" {
		snapshots = filepath.Join(root, "snapshots")
	}
	for _, d := range []string{filepath.Join(root, "volumes"), snapshots} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	// volumes/ itself must be traversable by the pods' users: the bind mounts expose only each volume's directory
	if err := os.Chmod(filepath.Join(root, "volumes"), 0o711); err != nil {
		return nil, err
	}
	return &Store{root: root, snapshots: snapshots}, nil
}

func idFor(prefix, name string) string {
	sum := sha256.Sum256([]byte(name))
	return prefix + hex.EncodeToString(sum[:10])
}

// VolumePath is the directory holding a volume's files.
func (s *Store) VolumePath(id string) string { return filepath.Join(s.root, "volumes", id) }

func (s *Store) volumeMetaPath(id string) string   { return filepath.Join(s.root, "volumes", id+".json") }
func (s *Store) snapshotPath(id string) string     { return filepath.Join(s.snapshots, id+".tar") }
func (s *Store) snapshotMetaPath(id string) string { return filepath.Join(s.snapshots, id+".json") }

func validID(id string) bool {
	if len(id) < 5 || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// CreateVolume makes the volume called name (or returns the one an earlier call made). fill, when given,
// writes the initial content into the new, empty directory (a restore from a snapshot or a clone).
func (s *Store) CreateVolume(name string, capacityBytes int64, nodeID, sourceKind, sourceID string, fill func(dir string) error) (VolumeMeta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := idFor("vol-", name)
	if m, err := readJSON[VolumeMeta](s.volumeMetaPath(id)); err == nil {
		if m.CapacityBytes < capacityBytes || m.SourceKind != sourceKind || m.SourceID != sourceID {
			return VolumeMeta{}, fmt.Errorf("volume %q: %w", name, ErrConflict)
		}
		return m, nil
	}
	dir := s.VolumePath(id)
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return VolumeMeta{}, err
	}
	// like a fresh filesystem: the root directory belongs to root, pods get write access through fsGroup
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return VolumeMeta{}, err
	}
	if fill != nil {
		if err := fill(tmp); err != nil {
			_ = os.RemoveAll(tmp)
			return VolumeMeta{}, err
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		return VolumeMeta{}, err
	}
	m := VolumeMeta{ID: id, Name: name, CapacityBytes: capacityBytes, NodeID: nodeID, SourceKind: sourceKind, SourceID: sourceID, CreatedAt: time.Now().UTC()}
	if err := writeJSON(s.volumeMetaPath(id), m); err != nil {
		return VolumeMeta{}, err
	}
	return m, nil
}

// GetVolume returns a volume's metadata or ErrNotFound.
func (s *Store) GetVolume(id string) (VolumeMeta, error) {
	if !validID(id) {
		return VolumeMeta{}, ErrNotFound
	}
	m, err := readJSON[VolumeMeta](s.volumeMetaPath(id))
	if errors.Is(err, os.ErrNotExist) {
		return VolumeMeta{}, ErrNotFound
	}
	return m, err
}

// DeleteVolume removes a volume; deleting a missing volume succeeds.
func (s *Store) DeleteVolume(id string) error {
	if !validID(id) {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.RemoveAll(s.VolumePath(id)); err != nil {
		return err
	}
	if err := os.Remove(s.volumeMetaPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// CreateSnapshot archives the source volume's files as the snapshot called name (or returns the earlier one).
func (s *Store) CreateSnapshot(name, sourceVolumeID string) (SnapshotMeta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := idFor("snap-", name)
	if m, err := readJSON[SnapshotMeta](s.snapshotMetaPath(id)); err == nil {
		if m.SourceVolumeID != sourceVolumeID {
			return SnapshotMeta{}, fmt.Errorf("snapshot %q: %w", name, ErrConflict)
		}
		return m, nil
	}
	if !validID(sourceVolumeID) {
		return SnapshotMeta{}, fmt.Errorf("source volume %q: %w", sourceVolumeID, ErrNotFound)
	}
	if _, err := os.Stat(s.volumeMetaPath(sourceVolumeID)); err != nil {
		return SnapshotMeta{}, fmt.Errorf("source volume %q: %w", sourceVolumeID, ErrNotFound)
	}
	size, err := writeArchive(s.VolumePath(sourceVolumeID), s.snapshotPath(id))
	if err != nil {
		return SnapshotMeta{}, err
	}
	m := SnapshotMeta{ID: id, Name: name, SourceVolumeID: sourceVolumeID, SizeBytes: size, CreatedAt: time.Now().UTC()}
	if err := writeJSON(s.snapshotMetaPath(id), m); err != nil {
		return SnapshotMeta{}, err
	}
	return m, nil
}

// GetSnapshot returns a snapshot's metadata or ErrNotFound.
func (s *Store) GetSnapshot(id string) (SnapshotMeta, error) {
	if !validID(id) {
		return SnapshotMeta{}, ErrNotFound
	}
	m, err := readJSON[SnapshotMeta](s.snapshotMetaPath(id))
	if errors.Is(err, os.ErrNotExist) {
		return SnapshotMeta{}, ErrNotFound
	}
	return m, err
}

// ListSnapshots returns every snapshot, oldest first.
func (s *Store) ListSnapshots() ([]SnapshotMeta, error) {
	files, err := filepath.Glob(filepath.Join(s.snapshots, "*.json"))
	if err != nil {
		return nil, err
	}
	out := make([]SnapshotMeta, 0, len(files))
	for _, f := range files {
		m, err := readJSON[SnapshotMeta](f)
		if err != nil {
			continue // being written or removed
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].ID < out[j].ID
		}
		return out[i].CreatedAt.Before(out[j].CreatedAt)
	})
	return out, nil
}

// DeleteSnapshot removes a snapshot; deleting a missing snapshot succeeds.
func (s *Store) DeleteSnapshot(id string) error {
	if !validID(id) {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range []string{s.snapshotPath(id), s.snapshotMetaPath(id)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// RestoreSnapshot writes a snapshot's files into dir.
func (s *Store) RestoreSnapshot(id, dir string) error {
	if _, err := s.GetSnapshot(id); err != nil {
		return err
	}
	return extractArchive(s.snapshotPath(id), dir)
}

// CloneVolume copies a volume's files into dir.
func (s *Store) CloneVolume(id, dir string) error {
	if _, err := s.GetVolume(id); err != nil {
		return err
	}
	return copyTree(s.VolumePath(id), dir)
}

func readJSON[T any](path string) (T, error) {
	var v T
	b, err := os.ReadFile(path)
	if err != nil {
		return v, err
	}
	err = json.Unmarshal(b, &v)
	return v, err
}

// writeJSON replaces path atomically and durably (temp file, fsync, rename, fsync of the directory).
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
