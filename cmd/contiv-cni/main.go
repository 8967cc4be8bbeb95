package main

import (
	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/version"
)

func main() {
	p := plugin{}
	skel.PluginMainFuncs(skel.CNIFuncs{Add: p.add, Del: p.del, Check: p.check, Status: p.status},
		version.PluginSupports("0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"),
		"contiv-cni: the contiv-vpp agent's CNI plugin")
}
