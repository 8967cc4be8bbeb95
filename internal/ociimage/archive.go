package ociimage

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The annotations naming an image in an OCI layout's index: the OCI one
// (podman, skopeo) and containerd's (its import, kind's image loading).
const (
	annotationRefName    = "org.opencontainers.image.ref.name"
	annotationContainerd = "io.containerd.image.name"
)

// WriteArchive writes img, named ref (e.g. contiv/contiv-agent:1.0), as
// an OCI image layout in a tar file to w. Entries are in a fixed order
// with fixed metadata, every time mtime.
func WriteArchive(w io.Writer, img v1.Image, ref string, mtime time.Time) error {
	manifest, err := img.RawManifest()
	if err != nil {
		return err
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	desc := v1.Descriptor{MediaType: types.OCIManifestSchema1, Size: int64(len(manifest)),
		Annotations: map[string]string{annotationRefName: ref, annotationContainerd: normalize(ref)}}
	if desc.Digest, err = img.Digest(); err != nil {
		return err
	}
	index, err := json.Marshal(v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{desc}})
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	put := func(name string, data []byte) error {
		h := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: mtime.UTC(), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if strings.HasSuffix(name, "/") {
			h.Mode, h.Size, h.Typeflag = 0o755, 0, tar.TypeDir
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	blob := func(h v1.Hash, data []byte) error { return put("blobs/"+h.Algorithm+"/"+h.Hex, data) }
	if err := put("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := put("index.json", index); err != nil {
		return err
	}
	if err := put("blobs/", nil); err != nil {
		return err
	}
	if err := put("blobs/sha256/", nil); err != nil {
		return err
	}
	cfgName, err := img.ConfigName()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return err
		}
		if err := blob(d, data); err != nil {
			return err
		}
	}
	if err := blob(cfgName, config); err != nil {
		return err
	}
	if err := blob(desc.Digest, manifest); err != nil {
		return err
	}
	return tw.Close()
}

// normalize spells ref as containerd stores it: a reference without a
// registry is one of Docker Hub's, and one without an organisation is one
// of its library's.
func normalize(ref string) string {
	first, _, found := strings.Cut(ref, "/")
	switch {
	case found && (strings.ContainsAny(first, ".:") || first == "localhost"):
		return ref
	case found:
		return "docker.io/" + ref
	default:
		return "docker.io/library/" + ref
	}
}

// ReadArchive reads the image of the OCI archive at path (as WriteArchive
// writes it) into dir, and returns it and its name.
func ReadArchive(path, dir string) (v1.Image, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	if err := eachEntry(f, path, func(h *tar.Header, tr *tar.Reader) error {
		name := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(name, filepath.Clean(dir)+string(filepath.Separator)) {
			return fmt.Errorf("%s: entry %q leaves the layout", path, h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			return os.MkdirAll(name, 0o755)
		case tar.TypeReg:
			data, err := io.ReadAll(tr)
			if err != nil {
				return err
			}
			return os.WriteFile(name, data, 0o644)
		}
		return fmt.Errorf("%s: entry %q of type %c", path, h.Name, h.Typeflag)
	}); err != nil {
		return nil, "", err
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, "", err
	}
	if len(im.Manifests) != 1 {
		return nil, "", fmt.Errorf("%s: %d images, want 1", path, len(im.Manifests))
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	return img, im.Manifests[0].Annotations[annotationRefName], err
}

// eachEntry calls f with each entry of the tar stream r, in order, until f
// fails; path names the archive in errors.
func eachEntry(r io.Reader, path string, f func(h *tar.Header, tr *tar.Reader) error) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if err := f(h, tr); err != nil {
			return err
		}
	}
}
