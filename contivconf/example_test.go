package contivconf_test

import (
	"fmt"

	"contiv.dev/vpp/contivconf"
)

// Parse reports every unknown field and wrongly typed value at once.
func ExampleParse() {
	_, err := contivconf.Parse([]byte(`
ipam:
  podSubnetCIRD: 10.1.0.0/16
  serviceCIDR: 10.96.0.0/33
vpp:
  connectTimeout: 10
`))
	fmt.Println(err)
	// Output:
	// ipam.podSubnetCIRD: unknown field (did you mean ipam.podSubnetCIDR?)
	// ipam.serviceCIDR: invalid value "10.96.0.0/33": want a CIDR prefix like 10.1.0.0/16: prefix length out of range
	// vpp.connectTimeout: invalid value 10: a bare number has no unit: write it like "10s" or "10m"
}

// Validate names the field and the bad value of every problem.
func ExampleConfig_Validate() {
	c, err := contivconf.Parse([]byte(`
etcd:
  endpoints: [http://10.0.0.5:2379]
nat44:
  serviceLocalEndpointWeight: 0
ipam:
  podSubnetNodePrefixLength: 16
`))
	if err != nil {
		panic(err)
	}
	fmt.Println(c.Validate())
	// Output:
	// nat44.serviceLocalEndpointWeight: invalid value 0: must be from 1 to 255: the probability of a backend on this node relative to a remote one (1); a weight of 0 would never pick a local backend
	// ipam.podSubnetNodePrefixLength: invalid value 16: must be longer than ipam.podSubnetCIDR's /16
}

// ForNode merges a node's override onto the cluster-wide settings.
func ExampleConfig_ForNode() {
	c, err := contivconf.Parse([]byte(`
ipam:
  defaultGateway: 192.168.16.100
nodeConfig:
- nodeName: node-2
  mainInterface: {name: GigabitEthernet0/8/0, useDHCP: true}
  natExternalTraffic: false
`))
	if err != nil {
		panic(err)
	}
	for _, name := range []string{"node-1", "node-2"} {
		n := c.ForNode(name)
		gw := "none"
		if n.Gateway.IsValid() {
			gw = n.Gateway.String()
		}
		fmt.Printf("%s: interface %q dhcp=%v gateway=%s nat=%v\n", n.NodeName, n.MainInterface.Name, n.MainInterface.UseDHCP, gw, n.NATExternalTraffic)
	}
	// Output:
	// node-1: interface "" dhcp=false gateway=192.168.16.100 nat=true
	// node-2: interface "GigabitEthernet0/8/0" dhcp=true gateway=none nat=false
}
