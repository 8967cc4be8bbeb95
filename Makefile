GO ?= go
PKGS := ./...

.PHONY: run test bench lint build fuzz

## run: the agent on embedded etcd with the example cluster loaded; the simulated VPP is chosen
## explicitly (--vpp-simulate always, served on a socket of its own: make run never touches a VPP it
## did not start, even where /run/vpp/api.sock exists; the default is never).
## contivctl load -f x.yaml with no flags writes into its etcd (both default to 127.0.0.1:12379).
## The binary is built, then exec'd: Ctrl-C stops the agent, which exits 0, and so does make.
run:
	$(GO) build -o $(CURDIR)/.run/contiv-agent ./cmd/contiv-agent
	exec $(CURDIR)/.run/contiv-agent --config deploy/examples/agent.yaml --node-name node-1 --vpp-simulate always --etcd-embedded \
		--etcd-data-dir $(CURDIR)/.run/etcd --node-id-file $(CURDIR)/.run/node-id \
		--load deploy/examples/cluster.yaml

## test: vet, then every test with the race detector
test:
	$(GO) vet $(PKGS)
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

## chaos: the fault tests against a three-member embedded etcd (package chaos; slow, so not in
## make test): agents converge through etcd leader and follower kills and a 10 s member outage
.PHONY: chaos
chaos:
	CONTIV_CHAOS=1 $(GO) test -race -count=1 -timeout 15m -v ./chaos/

## e2e: the system against a real Kubernetes v1.37.2 control plane (nested module e2e/; not in make
## test). kube-apiserver and kube-controller-manager are built on the first run (~10 min on 2 cores)
## and cached by version under $$XDG_CACHE_HOME (~/.cache)/contiv-e2e; a warm run takes minutes.
## -mod=mod: a dependency the main module adds needs no edit of e2e/go.sum (checked against the
## checksum database).
.PHONY: e2e
e2e:
	cd e2e && GOFLAGS="$$GOFLAGS -mod=mod" $(GO) vet . && GOFLAGS="$$GOFLAGS -mod=mod" $(GO) test -race -count=1 -timeout 60m -v .

## vpp: builds VPP from a source archive (../shared/vpp/src/vpp-$(VPP_VERSION).tar.gz, or VPP_SRC=<archive
## or tree>) into a cache outside the checkout ($$XDG_CACHE_HOME or ~/.cache/contiv-vpp/<version>-<hash>-<recipe>),
## reused while the archive and the recipe are unchanged; VPP_BIN=<dir> uses an installed VPP instead. Only
## vpp, vppctl and the plugins the agent needs, one CPU variant, no LTO, at -O1 (VPP_OPT=-O3: as VPP's release), no
## debug information; installs the Debian build packages when missing (as root).
VPP_VERSION ?= 25.02
.PHONY: vpp e2e-vpp
vpp:
	VPP_VERSION=$(VPP_VERSION) e2evpp/vpp-build.sh

## e2e-vpp: the real-VPP suite (package e2evpp; not in make test): the agent binary against a real VPP per
## node, two nodes in network namespaces joined by VXLAN, real TCP and UDP, under both renderers; prints
## the table of scenarios and keeps every log under $$CONTIV_E2E_VPP_ARTIFACTS. Needs root. When it fails, what
## the failed tests logged is printed again after the table (e2evpp/failures.awk).
e2e-vpp:
	@build=$$(VPP_VERSION=$(VPP_VERSION) e2evpp/vpp-build.sh) || exit 1; \
		log=$$(mktemp -t e2evpp-log.XXXXXX); \
		{ CONTIV_E2E_VPP=$$build $(GO) test -race -count=1 -timeout 45m -v ./e2evpp/; echo $$? >$$log.rc; } 2>&1 | tee $$log; \
		rc=$$(cat $$log.rc); [ "$$rc" = 0 ] || awk -f e2evpp/failures.awk $$log; \
		rm -f $$log $$log.rc; exit $$rc

## bench: the standard benchmark of ../shared/BENCH.md (prints the table, writes bench/results.json)
bench:
	$(GO) run ./bench/cmd/contiv-bench -out bench/results.json

## lint: formatting, vet and staticcheck (its default checks; built from the module proxy at a pinned
## version on first use)
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet $(PKGS)
	$(STATICCHECK) $(PKGS)

build:
	$(GO) build $(PKGS)

## images: the agent, reflector and CLI images as OCI archives in IMAGES_DIR, built without a
## container daemon from the static binaries on a scratch-like base, reproducibly (every timestamp
## is SOURCE_DATE_EPOCH, default the last commit's time); then each is opened and checked
## (entrypoint, user, labels, the binary runs -h, the digest rebuilds)
IMAGE_TAG ?= latest
IMAGES_DIR ?= $(CURDIR)/.images
.PHONY: images
images:
	$(GO) run ./deploy/images -out $(IMAGES_DIR) -tag $(IMAGE_TAG)
	CONTIV_IMAGES=$(IMAGES_DIR) $(GO) test -count=1 -run '^TestBuiltImages$$' -v ./deploy/images

## fuzz: every fuzz target for FUZZTIME each, one after the other (FUZZFLAGS=-parallel=1 to use one core)
FUZZTIME ?= 30s
FUZZFLAGS ?=
FUZZ_TARGETS := kubestate:FuzzDecode kubestate:FuzzDecodeFast kubestate:FuzzDecodeStored kubestate:FuzzParseKey kubestate:FuzzLoadYAML kubestate:FuzzEndpointAddress contivconf:FuzzParse \
	agent:FuzzTagParser plugins/rest:FuzzRequestPath
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "== $$name (./$$pkg, $(FUZZTIME))"; \
		$(GO) test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=10s $(FUZZFLAGS) ./$$pkg; \
	done
