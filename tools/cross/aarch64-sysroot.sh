#!/usr/bin/env bash
# Unpacks Debian's arm64 builds of the libraries the runtime links into a
# sysroot for the aarch64 cross build (docs/kv260.md, "Building for the
# board's cores"):
#
#   tools/cross/aarch64-sysroot.sh DIR
#
# The packages are fetched with `apt-get download` and unpacked with
# `dpkg -x`, never installed: libsentencepiece-dev is not Multi-Arch: same,
# so installing its arm64 build would remove the amd64 one the host build
# needs. Adds the arm64 architecture to dpkg (harmless to the host; needed
# for apt to see arm64 packages) and refreshes the package lists once.
# Re-running with the same package list is a no-op.
set -euo pipefail

dir=${1:?usage: aarch64-sysroot.sh DIR}
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo

# The runtime's libraries (sentencepiece; cpp-httplib for pccx-serve, with
# what its .so and .pc name) and the header-only ones the build includes.
arm64_packages="libsentencepiece0 libsentencepiece-dev
  libcpp-httplib0.11 libcpp-httplib-dev libssl3 libssl-dev zlib1g zlib1g-dev
  libbrotli1 libbrotli-dev libxxhash0 libxxhash-dev"
all_packages="nlohmann-json3-dev"
want=$(echo $arm64_packages $all_packages)

if [ -f "$dir/.packages" ] && [ "$(cat "$dir/.packages")" = "$want" ]; then
  exit 0
fi

if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "aarch64-sysroot: adding the arm64 architecture to dpkg"
  $sudo dpkg --add-architecture arm64
  $sudo apt-get update -q
fi

work=$(mktemp -d)
chmod 755 "$work" # apt's download sandbox user writes into it
trap 'rm -rf "$work"' EXIT
names=""
for p in $arm64_packages; do names="$names $p:arm64"; done
download() { (cd "$work" && apt-get download -q $names $all_packages); }
if ! download; then
  # Lists older than the arm64 architecture: refresh them once.
  $sudo apt-get update -q
  download
fi

rm -rf "$dir.partial"
mkdir -p "$dir.partial"
for deb in "$work"/*.deb; do
  dpkg -x "$deb" "$dir.partial"
done
# Absolute links (libz.so -> /lib/...) would leave the sysroot: make them
# relative to their place inside it.
find "$dir.partial" -type l | while read -r link; do
  target=$(readlink "$link")
  case "$target" in
    /*) ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" \
          "$dir.partial$target")" "$link" ;;
  esac
done
echo "$want" > "$dir.partial/.packages"
rm -rf "$dir"
mv "$dir.partial" "$dir"
echo "aarch64-sysroot: $(ls "$work"/*.deb | wc -l) packages unpacked into $dir"
