// mkimage writes a container image as a docker-archive tar (the format of `docker save`, which
// `ctr images import`, `podman load` and `kind load image-archive` read) from existing layer tars and single files,
// without a container engine:
//
//	mkimage --out img.tar --name registry/name:tag [--layer rootfs.tar]... [--file SRC:DST[:MODE]]...
//	        [--entrypoint '["/bin/x","--flag"]'] [--cmd '[...]'] [--env K=V]... [--user UID[:GID]] [--workdir DIR] [--stop-signal SIG]
//
// Files given with --file go into one last layer (owned by root, parents created). Layers are stored uncompressed.
package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

type imageConfig struct {
	Entrypoint []string          `json:"Entrypoint,omitempty"`
	Cmd        []string          `json:"Cmd,omitempty"`
	Env        []string          `json:"Env,omitempty"`
	User       string            `json:"User,omitempty"`
	WorkingDir string            `json:"WorkingDir,omitempty"`
	Labels     map[string]string `json:"Labels,omitempty"`
	StopSignal string            `json:"StopSignal,omitempty"`
}

type historyEntry struct {
	Created   string `json:"created"`
	CreatedBy string `json:"created_by"`
}

type configFile struct {
	Architecture string         `json:"architecture"`
	OS           string         `json:"os"`
	Created      string         `json:"created"`
	Config       imageConfig    `json:"config"`
	RootFS       rootFS         `json:"rootfs"`
	History      []historyEntry `json:"history"`
}

type rootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

type manifestEntry struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// fixed time for the files' layer and the config, so equal inputs give equal images
var epoch = time.Unix(0, 0).UTC()

func main() {
	var names, layers, files, envs multi
	out := flag.String("out", "", "output docker-archive tar")
	entrypoint := flag.String("entrypoint", "", "entrypoint, as a JSON array")
	cmd := flag.String("cmd", "", "command, as a JSON array")
	user := flag.String("user", "", "user (uid[:gid])")
	workdir := flag.String("workdir", "", "working directory")
	stopSignal := flag.String("stop-signal", "", "stop signal (e.g. SIGRTMIN+3)")
	flag.Var(&names, "name", "image name with tag (repeatable)")
	flag.Var(&layers, "layer", "layer tar, bottom first (repeatable)")
	flag.Var(&files, "file", "SRC:DST[:MODE] put into the last layer (repeatable)")
	flag.Var(&envs, "env", "environment variable K=V (repeatable)")
	flag.Parse()
	log.SetFlags(0)
	if *out == "" || len(names) == 0 {
		log.Fatal("mkimage: --out and --name are required")
	}
	cfg := imageConfig{Env: envs, User: *user, WorkingDir: *workdir, StopSignal: *stopSignal}
	for _, p := range []struct {
		s   string
		dst *[]string
	}{{*entrypoint, &cfg.Entrypoint}, {*cmd, &cfg.Cmd}} {
		if p.s != "" {
			if err := json.Unmarshal([]byte(p.s), p.dst); err != nil {
				log.Fatalf("mkimage: bad JSON array %q: %v", p.s, err)
			}
		}
	}
	if len(cfg.Env) == 0 {
		cfg.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	}
	if err := run(*out, names, layers, files, cfg); err != nil {
		log.Fatalf("mkimage: %v", err)
	}
}

func run(out string, names, layers, files []string, cfg imageConfig) error {
	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	tw := tar.NewWriter(f)
	var diffIDs, layerPaths []string
	var history []historyEntry
	for _, l := range layers {
		id, err := addLayerFile(tw, l)
		if err != nil {
			return fmt.Errorf("layer %s: %w", l, err)
		}
		diffIDs = append(diffIDs, "sha256:"+id)
		layerPaths = append(layerPaths, id+"/layer.tar")
		history = append(history, historyEntry{Created: epoch.Format(time.RFC3339), CreatedBy: "mkimage layer " + filepath.Base(l)})
	}
	if len(files) > 0 {
		b, err := filesLayer(files)
		if err != nil {
			return err
		}
		id := sha(b)
		if err := addBytes(tw, id+"/layer.tar", b); err != nil {
			return err
		}
		diffIDs = append(diffIDs, "sha256:"+id)
		layerPaths = append(layerPaths, id+"/layer.tar")
		history = append(history, historyEntry{Created: epoch.Format(time.RFC3339), CreatedBy: "mkimage files"})
	}
	if len(diffIDs) == 0 {
		return fmt.Errorf("an image needs at least one layer or file")
	}
	conf, err := json.Marshal(configFile{
		Architecture: "amd64", OS: "linux", Created: epoch.Format(time.RFC3339), Config: cfg,
		RootFS: rootFS{Type: "layers", DiffIDs: diffIDs}, History: history,
	})
	if err != nil {
		return err
	}
	confName := sha(conf) + ".json"
	if err := addBytes(tw, confName, conf); err != nil {
		return err
	}
	man, err := json.Marshal([]manifestEntry{{Config: confName, RepoTags: names, Layers: layerPaths}})
	if err != nil {
		return err
	}
	if err := addBytes(tw, "manifest.json", man); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func addBytes(tw *tar.Writer, name string, b []byte) error {
	if dir := path.Dir(name); dir != "." {
		if err := tw.WriteHeader(&tar.Header{Name: dir + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch}); err != nil {
			return err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(b)), ModTime: epoch}); err != nil {
		return err
	}
	_, err := tw.Write(b)
	return err
}

// addLayerFile copies a layer tar into the archive as <sha256>/layer.tar (hashing it first).
func addLayerFile(tw *tar.Writer, p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", err
	}
	id := hex.EncodeToString(h.Sum(nil))
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	if err := tw.WriteHeader(&tar.Header{Name: id + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch}); err != nil {
		return "", err
	}
	if err := tw.WriteHeader(&tar.Header{Name: id + "/layer.tar", Typeflag: tar.TypeReg, Mode: 0o644, Size: n, ModTime: epoch}); err != nil {
		return "", err
	}
	if _, err := io.Copy(tw, f); err != nil {
		return "", err
	}
	return id, nil
}

// filesLayer builds a layer tar holding the given files (SRC:DST[:MODE]) and their parent directories.
func filesLayer(specs []string) ([]byte, error) {
	type entry struct {
		src, dst string
		mode     int64
	}
	var entries []entry
	dirs := map[string]bool{}
	for _, s := range specs {
		parts := strings.Split(s, ":")
		if len(parts) < 2 || len(parts) > 3 {
			return nil, fmt.Errorf("bad --file %q: want SRC:DST[:MODE]", s)
		}
		e := entry{src: parts[0], dst: strings.TrimPrefix(path.Clean(parts[1]), "/")}
		st, err := os.Stat(e.src)
		if err != nil {
			return nil, err
		}
		e.mode = int64(st.Mode().Perm())
		if len(parts) == 3 {
			m, err := strconv.ParseInt(parts[2], 8, 32)
			if err != nil {
				return nil, fmt.Errorf("bad mode in --file %q", s)
			}
			e.mode = m
		}
		entries = append(entries, e)
		for d := path.Dir(e.dst); d != "." && d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	var dirList []string
	for d := range dirs {
		dirList = append(dirList, d)
	}
	sort.Strings(dirList) // parents before children
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range dirList {
		if err := tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch}); err != nil {
			return nil, err
		}
	}
	for _, e := range entries {
		b, err := os.ReadFile(e.src)
		if err != nil {
			return nil, err
		}
		if err := tw.WriteHeader(&tar.Header{Name: e.dst, Typeflag: tar.TypeReg, Mode: e.mode, Size: int64(len(b)), ModTime: epoch}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(b); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
