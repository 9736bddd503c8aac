package hostpath

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// writeArchive writes a tar of every file under src (modes, owners and times kept) to dst, durably, and
// returns the archive's size.
func writeArchive(src, dst string) (int64, error) {
	tmp := dst + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, err
	}
	fail := func(err error) (int64, error) {
		f.Close()
		os.Remove(tmp)
		return 0, err
	}
	if err := writeTar(src, f); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	st, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return 0, err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return 0, err
	}
	return st.Size(), syncDir(filepath.Dir(dst))
}

func writeTar(src string, w io.Writer) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(path); err != nil {
				return err
			}
		}
		if !info.Mode().IsRegular() && !info.IsDir() && info.Mode()&fs.ModeSymlink == 0 {
			return nil // sockets, fifos, devices: not data
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if info.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uname, hdr.Gname = "", ""
		hdr.Format = tar.FormatPAX
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			in, err := os.Open(path)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, in)
			in.Close()
			if err != nil {
				return fmt.Errorf("archiving %s: %w", path, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// extractArchive writes the files of the tar archive at src into the (empty) directory dst.
func extractArchive(src, dst string) error {
	f, err := os.Open(src)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return ErrNotFound
		}
		return err
	}
	defer f.Close()
	return readTar(f, dst)
}

type dirTimes struct {
	path  string
	mtime time.Time
}

func readTar(r io.Reader, dst string) error {
	tr := tar.NewReader(r)
	var dirs []dirTimes
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(filepath.FromSlash(hdr.Name))
		if name == ".." || strings.HasPrefix(name, "../") || filepath.IsAbs(name) {
			return fmt.Errorf("archive entry %q leaves the volume", hdr.Name)
		}
		path := filepath.Join(dst, name)
		mode := fs.FileMode(hdr.Mode) & fs.ModePerm
		switch hdr.Typeflag {
		case tar.TypeDir:
			if name != "." {
				if err := os.Mkdir(path, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
					return err
				}
			}
			dirs = append(dirs, dirTimes{path, hdr.ModTime})
		case tar.TypeReg:
			out, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, tr); err != nil {
				out.Close()
				return err
			}
			if err := out.Sync(); err != nil {
				out.Close()
				return err
			}
			if err := out.Close(); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.Symlink(hdr.Linkname, path); err != nil {
				return err
			}
			if err := os.Lchown(path, hdr.Uid, hdr.Gid); err != nil {
				return err
			}
			continue
		default:
			continue
		}
		if err := os.Lchown(path, hdr.Uid, hdr.Gid); err != nil {
			return err
		}
		// after chown, which clears set-id bits
		if err := os.Chmod(path, mode|setIDBits(hdr.Mode)); err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeReg {
			if err := os.Chtimes(path, hdr.ModTime, hdr.ModTime); err != nil {
				return err
			}
		}
	}
	// directory times last: writing their entries changed them
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chtimes(dirs[i].path, dirs[i].mtime, dirs[i].mtime); err != nil {
			return err
		}
	}
	return syncDir(dst)
}

func setIDBits(m int64) fs.FileMode {
	var out fs.FileMode
	if m&syscall.S_ISUID != 0 {
		out |= fs.ModeSetuid
	}
	if m&syscall.S_ISGID != 0 {
		out |= fs.ModeSetgid
	}
	if m&syscall.S_ISVTX != 0 {
		out |= fs.ModeSticky
	}
	return out
}

// copyTree copies the files under src into the (empty) directory dst through a tar stream.
func copyTree(src, dst string) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeTar(src, pw)) }()
	err := readTar(pr, dst)
	pr.CloseWithError(err)
	return err
}
