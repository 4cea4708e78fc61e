#!/usr/bin/env bash
# Populates a minimal rootfs from the host's static busybox (Debian package busybox-static):
# one 2 MB binary with sh, coreutils, ps, nc, wget and ip applets. Used by fast tests.
# Usage: rootfs.sh <empty-dir>
set -euo pipefail
root="$1"
bb=$(command -v busybox)
mkdir -p "$root"/{bin,etc,tmp,proc,sys,dev,workspace,home/troupe,root}
cp "$bb" "$root/bin/busybox"
for applet in $("$bb" --list); do
  [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
done
mkdir -p "$root/usr/bin" "$root/sbin" "$root/usr/sbin"
printf 'root:x:0:0:root:/root:/bin/sh\ntroupe:x:1000:1000:troupe:/home/troupe:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$root/etc/passwd"
printf 'root:x:0:\ntroupe:x:1000:\nnogroup:x:65534:\n' >"$root/etc/group"
chmod 1777 "$root/tmp"
chown 1000:1000 "$root/workspace" "$root/home/troupe"
chmod 0755 "$root/workspace"
