package ociimage

import (
	"archive/tar"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// Info is what Inspect found in an image archive.
type Info struct {
	Ref    string
	Digest v1.Hash
	Config *v1.ConfigFile
	// Files are the image's files (flattened), each with its mode and
	// owner as "mode uid:gid".
	Files map[string]string
	// Entrypoint is the entrypoint's binary, copied out to the directory
	// given to Inspect; Static tells whether it is a statically linked ELF
	// (no interpreter, no dynamic section), which a scratch base needs.
	Entrypoint string
	Static     bool
}

// Inspect opens the OCI archive at path, working in dir: it checks the
// image's blobs against their digests and sizes, reads its name and
// config, lists its files and copies its entrypoint out.
func Inspect(path, dir string) (*Info, error) {
	img, ref, err := ReadArchive(path, filepath.Join(dir, "layout"))
	if err != nil {
		return nil, err
	}
	if err := validate.Image(img); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	info := &Info{Ref: ref, Files: map[string]string{}}
	if info.Digest, err = img.Digest(); err != nil {
		return nil, err
	}
	if info.Config, err = img.ConfigFile(); err != nil {
		return nil, err
	}
	if len(info.Config.Config.Entrypoint) == 0 {
		return nil, fmt.Errorf("%s: no entrypoint", path)
	}
	entry := strings.TrimPrefix(info.Config.Config.Entrypoint[0], "/")
	rc := mutate.Extract(img)
	defer rc.Close()
	if err := eachEntry(rc, path, func(h *tar.Header, tr *tar.Reader) error {
		name := strings.TrimSuffix(h.Name, "/")
		info.Files[name] = fmt.Sprintf("%o %d:%d", h.Mode, h.Uid, h.Gid)
		if name != entry {
			return nil
		}
		info.Entrypoint = filepath.Join(dir, filepath.Base(entry))
		out, err := os.OpenFile(info.Entrypoint, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
		if err != nil {
			return err
		}
		_, err = io.Copy(out, tr)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		return err
	}); err != nil {
		return nil, err
	}
	if info.Entrypoint == "" {
		return nil, fmt.Errorf("%s: entrypoint %s is not in the image", path, entry)
	}
	info.Static, err = static(info.Entrypoint)
	return info, err
}

// static tells whether the ELF file at path is statically linked.
func static(path string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			return false, nil
		}
	}
	return true, nil
}
