package hostpath

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func TestSnapshotRestoreKeepsFilesModesAndTimes(t *testing.T) {
	s, err := NewStore(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	vol, err := s.CreateVolume("pvc-a", 1<<20, "node-1", "", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := s.VolumePath(vol.ID)
	write(t, filepath.Join(dir, "db", "chunk-000000.000000"), "events", 0o640)
	write(t, filepath.Join(dir, "index", "indexmap"), "map", 0o600)
	if err := os.Symlink("db/chunk-000000.000000", filepath.Join(dir, "latest")); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(dir, "index", "indexmap"), old, old); err != nil {
		t.Fatal(err)
	}

	snap, err := s.CreateSnapshot("snapcontent-1", vol.ID)
	if err != nil {
		t.Fatal(err)
	}
	if snap.SizeBytes == 0 || snap.SourceVolumeID != vol.ID {
		t.Fatalf("unexpected snapshot %+v", snap)
	}
	// the source changes after the snapshot: the restore has the old content
	write(t, filepath.Join(dir, "db", "chunk-000000.000000"), "changed", 0o640)

	restored, err := s.CreateVolume("pvc-b", 1, "node-1", "snapshot", snap.ID, func(d string) error { return s.RestoreSnapshot(snap.ID, d) })
	if err != nil {
		t.Fatal(err)
	}
	rdir := s.VolumePath(restored.ID)
	if b, _ := os.ReadFile(filepath.Join(rdir, "db", "chunk-000000.000000")); string(b) != "events" {
		t.Fatalf("restored chunk holds %q", b)
	}
	st, err := os.Stat(filepath.Join(rdir, "index", "indexmap"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 || !st.ModTime().Equal(old) {
		t.Fatalf("indexmap mode %v time %v", st.Mode().Perm(), st.ModTime())
	}
	if l, _ := os.Readlink(filepath.Join(rdir, "latest")); l != "db/chunk-000000.000000" {
		t.Fatalf("symlink points to %q", l)
	}
}

func TestCreateIsIdempotentAndConflictsAreRefused(t *testing.T) {
	s, err := NewStore(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.CreateVolume("pvc-a", 100, "n", "", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.CreateVolume("pvc-a", 100, "n", "", "", nil)
	if err != nil || again.ID != a.ID {
		t.Fatalf("repeat: %v %v", again, err)
	}
	if _, err := s.CreateVolume("pvc-a", 200, "n", "", "", nil); !errors.Is(err, ErrConflict) {
		t.Fatalf("bigger repeat: %v", err)
	}
	b, _ := s.CreateVolume("pvc-b", 1, "n", "", "", nil)
	if _, err := s.CreateSnapshot("snap", a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateSnapshot("snap", b.ID); !errors.Is(err, ErrConflict) {
		t.Fatalf("snapshot of another volume under the same name: %v", err)
	}
	if _, err := s.CreateSnapshot("snap2", "vol-doesnotexist"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("snapshot of a missing volume: %v", err)
	}
	if err := s.DeleteVolume(a.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteVolume(a.ID); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := s.GetVolume(a.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted volume: %v", err)
	}
}

func TestArchiveRefusesEntriesOutsideTheVolume(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "../escape", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "vol")
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := readTar(&buf, dst); err == nil {
		t.Fatal("an entry leaving the volume was accepted")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dst), "escape")); err == nil {
		t.Fatal("a file was written outside the volume")
	}
}

func TestDriverRejectsBlockAndMultiNodeVolumes(t *testing.T) {
	s, _ := NewStore(t.TempDir(), "")
	d := &Driver{Name: "x", NodeID: "n", Store: s}
	block := &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}
	shared := &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER}}
	for _, c := range []*csi.VolumeCapability{block, shared} {
		_, err := d.CreateVolume(context.Background(), &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: []*csi.VolumeCapability{c}})
		if status.Code(err) != codes.InvalidArgument {
			t.Fatalf("capability %v: %v", c, err)
		}
	}
	other := &csi.TopologyRequirement{Requisite: []*csi.Topology{{Segments: map[string]string{TopologyKey: "elsewhere"}}}}
	mount := &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}
	_, err := d.CreateVolume(context.Background(), &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: []*csi.VolumeCapability{mount}, AccessibilityRequirements: other})
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("volume for another node: %v", err)
	}
}
