package main

import (
	"fmt"
	"os"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/version"
)

const about = "contiv-cni: the contiv-vpp agent's CNI plugin"

func main() {
	// Not a CNI call (no CNI_COMMAND): the installer, or help.
	if os.Getenv("CNI_COMMAND") == "" && len(os.Args) > 1 {
		switch os.Args[1] {
		case "install":
			if err := install(os.Args[2:], os.Stdout); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			return
		case "-h", "--help", "help":
			fmt.Println(about + "\n\nRun by the container runtime as a CNI plugin (CNI_COMMAND set), or:\n  contiv-cni install [-bin-dir DIR] [-conf-dir DIR] [-socket PATH] [-timeout 25s]")
			return
		}
	}
	p := plugin{}
	skel.PluginMainFuncs(skel.CNIFuncs{Add: p.add, Del: p.del, Check: p.check, Status: p.status, GC: p.gc},
		version.PluginSupports("0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"), about)
}
