#!/usr/bin/env bash
# Debian bookworm minbase (~200 MB) with an unprivileged user troupe (uid/gid 1000) and a
# /workspace owned by it: Docker copies that ownership into the empty named volume a sandbox
# mounts there, which is what makes the workspace writable without any root step.
# Usage: rootfs.sh <empty-dir>   (needs root and debootstrap; reaches the Debian mirror)
set -euo pipefail
root="$1"
mirror="${TROUPE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
debootstrap --variant=minbase bookworm "$root" "$mirror"
chroot "$root" groupadd --gid 1000 troupe
chroot "$root" useradd --uid 1000 --gid 1000 --create-home --shell /bin/bash troupe
mkdir -p "$root/workspace"
chown 1000:1000 "$root/workspace"
chmod 0755 "$root/workspace"
# Keep the image small and reproducible-ish: no package caches, no apt lists, no logs.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/var/log/*.log
