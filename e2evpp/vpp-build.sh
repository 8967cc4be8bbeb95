#!/usr/bin/env bash
# Builds VPP from a source archive into a cache outside the checkout and prints the build
# directory (bin/vpp, bin/vppctl, lib/x86_64-linux-gnu/vpp_plugins) on its last line.
#
#   VPP_VERSION  25.02 (default) or 26.06: the archive ../shared/vpp/src/vpp-$VPP_VERSION.tar.gz
#   VPP_SRC      another archive (.tar.gz of src/ and LICENSE) or an unpacked tree
#   VPP_BIN      an installed VPP instead (a directory with bin/vpp): printed, nothing built
#   VPP_OPT      the optimisation level, -O1 (default; the suite's) or -O3 (VPP's release: figures of
#                VPP's own speed), -O0, -O2, -Os
#   XDG_CACHE_HOME  the cache's parent (default ~/.cache): <cache>/contiv-vpp/<version>-<hash>/
#
# A build is reused while the archive's SHA-256 (a tree's: its file list and times) and the recipe
# are unchanged. Only the plugins the agent needs, one CPU variant, no LTO (../shared/vpp/BUILD.md);
# only the targets the suite runs (vpp, vppctl, those plugins), at -O1, without debug information.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
if [ -n "${VPP_BIN:-}" ]; then
	if [ ! -x "$VPP_BIN/bin/vpp" ]; then
		echo "VPP_BIN=$VPP_BIN has no bin/vpp" >&2
		exit 1
	fi
	echo "$VPP_BIN"
	exit 0
fi

version=${VPP_VERSION:-25.02}
src=${VPP_SRC:-$here/../../shared/vpp/src/vpp-$version.tar.gz}
if [ ! -e "$src" ]; then
	cat >&2 <<MSG
no VPP source: $src is missing.
  VPP_SRC=<archive or tree>  builds VPP from another source
  VPP_BIN=<dir>              uses an installed VPP (a directory with bin/vpp and
                             lib/x86_64-linux-gnu/vpp_plugins)
MSG
	exit 1
fi

if [ -d "$src" ]; then
	key=$(cd "$src" && find . -type f -printf '%p %T@ %s\n' | sort | sha256sum | cut -c1-16)
else
	key=$(sha256sum "$src" | cut -c1-16)
fi
# recipe names how the build is made: a change of targets or flags makes a new build. VPP_OPT
# (default -O1, below) is part of it: VPP_OPT=-O3 builds VPP as its release does, for figures of
# VPP's own speed.
opt=${VPP_OPT:--O1}
case $opt in -O0 | -O1 | -O2 | -O3 | -Os) ;; *)
	echo "VPP_OPT=$opt: want one of -O0 -O1 -O2 -O3 -Os" >&2
	exit 1
	;;
esac
recipe=r3
[ "$opt" = -O1 ] || recipe=r3$opt
cache=${XDG_CACHE_HOME:-$HOME/.cache}/contiv-vpp/$version-$key-$recipe
build=$cache/build
if [ -f "$cache/complete" ]; then
	echo "$build"
	exit 0
fi

# The Debian packages the build needs, installed when missing (as root, as CI runs).
need=()
for p in cmake ninja-build python3-ply libssl-dev pkg-config libnuma-dev uuid-dev libpcap-dev gcc g++ ethtool iproute2; do
	dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
	echo "installing ${need[*]}" >&2
	apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >&2
fi

plugins=(nat af_packet ping cnat acl vxlan tap)
mkdir -p "$cache"
if [ -d "$src" ]; then
	tree=$src
else
	# An interrupted build goes on where it stopped: the tree is unpacked once.
	tree=$cache/src
	if [ ! -f "$tree/src/CMakeLists.txt" ]; then
		rm -rf "$tree" && mkdir -p "$tree"
		tar -xzf "$src" -C "$tree" --strip-components=1
	fi
fi
# 25.02 has only an exclusion list; 26.06 has VPP_PLUGINS, an allow-list, and refuses an exclusion
# list naming plugins it does not configure.
exclude=()
for d in "$tree"/src/plugins/*/; do
	p=$(basename "$d")
	keep=no
	for k in "${plugins[@]}"; do [ "$p" = "$k" ] && keep=yes; done
	[ $keep = no ] && exclude+=("$p")
done
if grep -q VPP_PLUGINS_FILTER "$tree/src/plugins/CMakeLists.txt"; then
	pluginFlag="-DVPP_PLUGINS=$(IFS=,; echo "${plugins[*]}")"
else
	pluginFlag="-DVPP_EXCLUDED_PLUGINS=$(IFS=,; echo "${exclude[*]}")"
fi

# VPP builds with -Werror; Debian 12's gcc 12 warns where VPP's CI compilers did not
# (25.02: a strncpy in vppinfra/devicetree.c). Those warnings stay warnings.
cflags="-Wno-error=stringop-truncation -Wno-error=maybe-uninitialized -Wno-error=array-bounds -Wno-error=stringop-overflow -Wno-error=dangling-pointer"
# A release build compiles with -O3 -g (VPP's src/CMakeLists.txt adds -g as a compile option, after
# CMAKE_C_FLAGS): the compile rule ends in -O1 -g0 instead, as the last -O and -g options win.
# Debug information was a third of the compile time (ip4_forward.c: 6.8 s with it, 4.4 s without);
# -O1 halves the heaviest files (ip4_sv_reass.c 17.2 -> 9.1 s of CPU, acl's dataplane_node.c
# 28.3 -> 12.0 s; -O2 16.0 and 22.6, -O0 13.4 and 21.4: unoptimised, VPP's always-inline node
# functions grow). The suite's VPP forwards a few thousand packets a second; what it checks does not
# depend on the optimisation level (docs/real-vpp.md).
compile="<CMAKE_C_COMPILER> <DEFINES> <INCLUDES> <FLAGS> $opt -g0 -o <OBJECT> -c <SOURCE>"
start=$(date +%s)
export PATH=/usr/bin:$PATH # the API generator needs the system python3 with ply
cmake -G Ninja -S "$tree/src" -B "$build" \
	-DCMAKE_BUILD_TYPE=Release -DVPP_BUILD_TESTS=OFF -DPython3_EXECUTABLE=/usr/bin/python3 \
	-DVPP_BUILD_NATIVE_ONLY=ON -DVPP_USE_LTO=OFF "$pluginFlag" \
	-DCMAKE_C_FLAGS="$cflags" -DCMAKE_C_COMPILE_OBJECT="$compile" >"$cache/configure.log" 2>&1 ||
	{ tail -40 "$cache/configure.log" >&2; exit 1; }
# Only what the suite runs: not VPP's API test tools, client libraries, drivers or the plugins
# built beside nat's (nat44-ei, det44, nat64, ...).
targets=(bin/vpp bin/vppctl)
for p in "${plugins[@]}"; do
	t=lib/x86_64-linux-gnu/vpp_plugins/${p}_plugin.so
	ninja -C "$build" -t query "$t" >/dev/null 2>&1 && targets+=("$t")
done
ninja -C "$build" "${targets[@]}" >"$cache/build.log" 2>&1 || { tail -60 "$cache/build.log" >&2; exit 1; }
end=$(date +%s)
echo "built VPP $version from $src in $((end - start)) s" >&2
echo "$((end - start))" >"$cache/complete"
echo "$build"
