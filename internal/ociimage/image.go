package ociimage

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The users of the base: root, and nonroot for the programs that need no
// privilege (the distroless convention's IDs).
const (
	RootUser    = "0:0"
	NonrootUser = "65532:65532"
)

// Spec is one image: one static binary on the base.
type Spec struct {
	// Binary is the static binary's path on disk; Path where it goes in
	// the image (also the entrypoint).
	Binary, Path string
	// Args are the entrypoint's default arguments (the image's Cmd).
	Args []string
	// User is RootUser or NonrootUser.
	User string
	// Labels are the config's labels (org.opencontainers.image.*).
	Labels map[string]string
	// Created is every timestamp of the image: its config, its history
	// and its files.
	Created time.Time
	// Arch is the GOARCH the binary was built for.
	Arch string
}

// Build assembles s's image: the base layer, then the binary's.
func Build(s Spec) (v1.Image, error) {
	if !path.IsAbs(s.Path) || s.Binary == "" {
		return nil, fmt.Errorf("image spec: binary %q to absolute path %q: %w", s.Binary, s.Path, errBadSpec)
	}
	if s.User != RootUser && s.User != NonrootUser {
		return nil, fmt.Errorf("image spec: user %q is neither %s nor %s: %w", s.User, RootUser, NonrootUser, errBadSpec)
	}
	bin, err := os.ReadFile(s.Binary)
	if err != nil {
		return nil, fmt.Errorf("image binary: %w", err)
	}
	base, err := layer(baseFiles(), s.Created)
	if err != nil {
		return nil, err
	}
	prog, err := layer(binaryFiles(s.Path, bin), s.Created)
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: s.Created.UTC()}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, MediaType: types.OCILayer, History: v1.History{Created: created, CreatedBy: "ociimage: base (users, /tmp)"}},
		mutate.Addendum{Layer: prog, MediaType: types.OCILayer, History: v1.History{Created: created, CreatedBy: "ociimage: " + s.Path}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created, cf.OS, cf.Architecture = created, "linux", s.Arch
	cf.Config = v1.Config{
		Entrypoint: []string{s.Path},
		Cmd:        s.Args,
		User:       s.User,
		Labels:     s.Labels,
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		WorkingDir: "/",
	}
	return mutate.ConfigFile(img, cf)
}

var errBadSpec = errors.New("bad image spec")

// file is one entry of a layer.
type file struct {
	name     string // without leading slash
	mode     int64
	uid, gid int
	dir      bool
	data     []byte
}

func baseFiles() []file {
	return []file{
		{name: "etc", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "home", mode: 0o755, dir: true},
		{name: "home/nonroot", mode: 0o700, uid: 65532, gid: 65532, dir: true},
		{name: "root", mode: 0o700, dir: true},
		{name: "tmp", mode: 0o1777, dir: true},
	}
}

func binaryFiles(p string, bin []byte) []file {
	var out []file
	parts := strings.Split(strings.Trim(p, "/"), "/")
	for i := 1; i < len(parts); i++ {
		out = append(out, file{name: strings.Join(parts[:i], "/"), mode: 0o755, dir: true})
	}
	return append(out, file{name: strings.Join(parts, "/"), mode: 0o755, data: bin})
}

// layer makes a layer of files, in their order, every time mtime.
func layer(files []file, mtime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.gid, ModTime: mtime.UTC(), Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag, h.Name = tar.TypeDir, f.name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
}
