// Package depsreg pins the modules the project builds on while their users are
// being written, so that go.sum holds every entry they need. It is removed
// once every module is imported by real code.
package depsreg

import (
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/prometheus/client_golang/prometheus/testutil"
	_ "github.com/stretchr/testify/require"
	_ "go.etcd.io/etcd/client/v3"
	_ "go.etcd.io/etcd/client/v3/concurrency"
	_ "go.etcd.io/etcd/server/v3/embed"
	_ "go.fd.io/govpp/adapter/socketclient"
	_ "go.fd.io/govpp/adapter/mock"
	_ "go.fd.io/govpp/api"
	_ "go.fd.io/govpp/binapi/interface"
	_ "go.fd.io/govpp/binapi/nat44_ed"
	_ "go.fd.io/govpp/binapi/vpe"
	_ "go.fd.io/govpp/binapi/memclnt"
	_ "go.fd.io/govpp/codec"
	_ "go.fd.io/govpp/core"
	_ "go.uber.org/goleak"
	_ "go.uber.org/mock/gomock"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/api/discovery/v1"
	_ "k8s.io/apimachinery/pkg/util/yaml"
	_ "k8s.io/client-go/informers"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/kubernetes/fake"
	_ "k8s.io/client-go/kubernetes/scheme"
	_ "k8s.io/client-go/tools/clientcmd"
	_ "k8s.io/client-go/tools/leaderelection"
	_ "k8s.io/client-go/tools/leaderelection/resourcelock"
	_ "pgregory.net/rapid"
	_ "sigs.k8s.io/yaml"
)
