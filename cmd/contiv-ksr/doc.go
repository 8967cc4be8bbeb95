// Command contiv-ksr is the Kubernetes State Reflector: it mirrors the
// Services, EndpointSlices, Pods, Nodes and Namespaces of the Kubernetes API
// into etcd (package plugins/ksr does the work). It runs as a Deployment of
// two replicas; with leader election (the default) only the holder of the
// Lease writes, and a replica that loses the Lease stops writing at once.
// Every write is also fenced in etcd by the leader key (ksr/leader, see
// package plugins/ksr): a batch a deposed leader sends late is refused.
//
// Flags (every one optional except --etcd-endpoints):
//
//	--kubeconfig FILE          kubeconfig to reach the API; default $KUBECONFIG;
//	                           empty: the in-cluster service account
//	--master URL               API server address (https://IP:6443); replaces
//	                           the in-cluster address (the kubernetes
//	                           Service, which works only once Services do) or
//	                           the kubeconfig's server
//	--etcd-endpoints URLS      etcd endpoints, comma-separated (required: the
//	                           reflector writes for agents that read the same
//	                           etcd, so there is no embedded default)
//	--etcd-ca-file FILE        CA certificate of etcd (TLS)
//	--etcd-cert-file FILE      client certificate for etcd (TLS)
//	--etcd-key-file FILE       client key for etcd (TLS)
//	--etcd-dial-timeout D      how long to wait for etcd at start (5s)
//	--etcd-timeout D           bound of one write batch, node release or
//	                           health probe (10s)
//	--etcd-probe-interval D    how often etcd's health and data are checked (5s)
//	--resync-interval D        how often a mark and sweep repairs what was
//	                           changed in etcd behind the reflector's back
//	                           (10m; 0: never)
//	--leader-elect BOOL        elect a leader on a Lease (true); false only
//	                           for a single replica
//	--lease-namespace NS       namespace of the Lease; default $POD_NAMESPACE,
//	                           else contiv-system
//	--lease-name NAME          name of the Lease (contiv-ksr)
//	--lease-duration D         followers wait this long before taking over a
//	                           Lease that is not renewed (15s)
//	--renew-deadline D         the leader stops writing when it could not renew
//	                           for this long (10s); less than --lease-duration
//	--retry-period D           pause between Lease attempts (2s)
//	--leader-key-ttl D         TTL of the etcd leader key: how long another
//	                           replica waits for the key of one that died
//	                           without releasing it (15s)
//	--identity NAME            this replica's name in the Lease and the etcd
//	                           leader key; default
//	                           $POD_NAME, else the host name
//	--released-id-quarantine D how long the node ID of a deleted Node stays
//	                           reserved (1h; 0 frees it at once)
//	--http-addr ADDR           /healthz, /readyz, /metrics and /v1/status (:9191)
//	--log-level LEVEL          debug, info, warn or error (info)
//	--log-format FORMAT        text or json (text)
//
// SIGINT or SIGTERM stops the reflector: the leader gives the Lease and the
// etcd leader key up, so the other replica takes over without waiting for
// them to expire. main.go
// only wires the process; flags are parsed and checked in options.go.
package main
