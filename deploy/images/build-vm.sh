#!/usr/bin/env bash
# Builds Troupe's VM images offline: a QEMU guest disk (qcow2 base) with kernel and initrd.
#
#   deploy/images/build-vm.sh [NAME]        build vm-NAME (default: desktop) unless up to date
#   deploy/images/build-vm.sh --print-dir   print the directory the image gets; no build
#   options: --force (rebuild even when up to date), --no-install (never apt-get)
#   environment: TROUPE_VM_IMAGE_DIR (where images live; default /var/lib/troupe/vm-images)
#
# The recipe folder deploy/images/vm-<name>/ names a Docker image in `from` (built first with
# build.sh when missing). Its root filesystem is that image exported (`docker create` +
# `docker export`: the same desktop stack and agent.py as the `desktop` backend) plus
# /opt/troupe/vm-init, a small PID 1 that mounts proc/sys/dev/tmp, starts the session as uid 1000
# and the agent on the virtio-serial port troupe.agent. The kernel comes from Debian's
# linux-image-amd64 (`apt-get download`, unpacked with dpkg-deb: nothing is installed on the host);
# the initrd is a busybox initramfs (`initramfs-init`) that loads the modules listed in `modules`
# and switch_roots to /dev/vda, or prints TROUPE-PROBE-OK and powers off when booted with
# troupe.probe=1 (the node agent's accelerator probe). The disk is `mkfs.ext4 -d` (no mounts)
# converted to qcow2; environments run on per-VM overlays over it, read-only.
#
# Output: $TROUPE_VM_IMAGE_DIR/vm-<name>-<hash>/{vmlinuz,initrd.img,disk.qcow2,image.json} and the
# symlink vm-<name> -> vm-<name>-<hash>, where <hash> covers the recipe folder's files, this
# script's format and the parent Docker image's recipe hash. Progress: `[vm-images] ...` lines.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
recipe_format=1
out_root="${TROUPE_VM_IMAGE_DIR:-/var/lib/troupe/vm-images}"
docker_bin="${DOCKER:-docker}"
[ -x /usr/bin/docker ] && [ -z "${DOCKER:-}" ] && docker_bin=/usr/bin/docker

say() { printf '[vm-images] %s\n' "$*"; }
die() {
  printf 'build-vm.sh: %s\n' "$*" >&2
  exit 1
}

name=desktop
force=0
no_install=0
print_dir=0
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    --no-install) no_install=1 ;;
    --print-dir) print_dir=1 ;;
    -h | --help)
      sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    -*) die "unknown option '$arg' (see --help)" ;;
    *) name="$arg" ;;
  esac
done
[[ "$name" =~ ^[a-z0-9][a-z0-9-]*$ ]] && [ -d "$here/vm-$name" ] ||
  die "unknown VM image '$name' (recipes: $(cd "$here" && ls -d vm-*/ 2>/dev/null | tr -d / | tr '\n' ' '))"
recipe="$here/vm-$name"
parent="$(tr -d ' \n\r\t' <"$recipe/from")"
parent_tag="$("$here/build.sh" --print-tag "$parent")"

hash="$(
  {
    printf 'troupe-vm-image-format %s\nparent %s\n' "$recipe_format" "$parent_tag"
    (cd "$recipe" && find . -type f -printf '%P\n' | LC_ALL=C sort) | while IFS= read -r f; do
      printf 'file %s %s\n' "$f" "$(sha256sum <"$recipe/$f" | cut -d' ' -f1)"
    done
  } | sha256sum | cut -c1-12
)"
dir="$out_root/vm-$name-$hash"
if [ "$print_dir" = 1 ]; then
  printf '%s\n' "$dir"
  exit 0
fi

mkdir -p "$out_root"
exec {lock_fd}>"$out_root/.build.lock"
flock "$lock_fd"
if [ "$force" = 0 ] && [ -f "$dir/image.json" ]; then
  say "vm-$name: $dir is up to date"
  ln -sfn "$(basename "$dir")" "$out_root/vm-$name"
  exit 0
fi

missing=()
while read -r pkg; do
  [ -n "$pkg" ] || continue
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done <"$recipe/requires"
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$no_install" = 1 ] || [ "$(id -u)" != 0 ]; then
    die "vm-$name needs the Debian packages: ${missing[*]} (as root: apt-get install -y ${missing[*]})"
  fi
  say "vm-$name: installing build dependencies: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

start=$(date +%s)
work="$(mktemp -d "${TMPDIR:-/tmp}/troupe-vm-$name.XXXXXX")"
container=""
cleanup() {
  [ -n "$container" ] && "$docker_bin" rm -f "$container" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

# 1. The parent Docker image, built when missing.
"$docker_bin" image inspect "$parent_tag" >/dev/null 2>&1 || "$here/build.sh" "$parent"

# 2. The kernel and its modules, unpacked from the Debian package (nothing installed on the host).
say "vm-$name: downloading the kernel package"
kpkg="$(apt-cache depends linux-image-amd64 | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -1)"
[ -n "$kpkg" ] || die "cannot resolve linux-image-amd64 (apt-get update?)"
(cd "$work" && apt-get download -q "$kpkg" >/dev/null 2>&1) || {
  apt-get update -qq >/dev/null
  (cd "$work" && apt-get download -q "$kpkg" >/dev/null)
}
dpkg-deb -x "$work"/"$kpkg"_*.deb "$work/kernel"
kver="$(basename "$(ls -d "$work"/kernel/lib/modules/*)")"

# 3. The initramfs: static busybox, the modules in load order, the init script.
say "vm-$name: building the initramfs for $kver"
ird="$work/initramfs"
mkdir -p "$ird"/{bin,dev,proc,sys,newroot,lib/modules}
cp /bin/busybox "$ird/bin/busybox"
: >"$ird/modules.order"
grep -v '^#' "$recipe/modules" | while read -r m; do
  [ -n "$m" ] || continue
  [ -f "$work/kernel/lib/modules/$kver/$m" ] || die "module $m is not in $kpkg"
  cp "$work/kernel/lib/modules/$kver/$m" "$ird/lib/modules/$(basename "$m")"
  basename "$m" >>"$ird/modules.order"
done
install -m 0755 "$recipe/initramfs-init" "$ird/init"
(cd "$ird" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) | gzip -1 >"$work/initrd.img"

# 4. The root filesystem: the parent image exported, plus the VM's PID 1.
say "vm-$name: exporting $parent_tag"
container="$("$docker_bin" create "$parent_tag" /bin/true)"
mkdir -p "$work/root"
"$docker_bin" export "$container" | tar -C "$work/root" --numeric-owner -xf -
"$docker_bin" rm -f "$container" >/dev/null
container=""
rm -f "$work/root/.dockerenv"
install -m 0755 "$recipe/vm-init" "$work/root/opt/troupe/vm-init"
printf 'desktop\n' >"$work/root/etc/hostname"
printf '127.0.0.1 localhost desktop\n' >"$work/root/etc/hosts"
# Free space for the user's files and applications' writes: half the tree, at least 512 MiB.
used_mb="$(du -sm "$work/root" | cut -f1)"
disk_mb=$((used_mb + (used_mb / 2 > 512 ? used_mb / 2 : 512)))

# 5. The disk: ext4 populated without mounting, then qcow2.
say "vm-$name: mkfs.ext4 -d ($used_mb MiB of files, $disk_mb MiB disk)"
truncate -s "${disk_mb}M" "$work/disk.raw"
mkfs.ext4 -q -F -L troupe-root -O ^has_journal -d "$work/root" "$work/disk.raw"
rm -rf "$work/root"
qemu-img convert -q -f raw -O qcow2 "$work/disk.raw" "$work/disk.qcow2"
rm -f "$work/disk.raw"

mkdir -p "$dir.part"
mv "$work/disk.qcow2" "$work/initrd.img" "$dir.part/"
cp "$work/kernel/boot/vmlinuz-$kver" "$dir.part/vmlinuz"
chmod 0444 "$dir.part/disk.qcow2" "$dir.part/vmlinuz" "$dir.part/initrd.img"
qcow_mb=$(($(stat -c %s "$dir.part/disk.qcow2") / 1024 / 1024))
cat >"$dir.part/image.json" <<JSON
{"name":"vm-$name","hash":"$hash","parent":"$parent_tag","kernel":"$kpkg","kernelVersion":"$kver","diskMb":$disk_mb,"qcow2Mb":$qcow_mb,"builtAt":"$(date -u +%FT%TZ)","buildSeconds":$(($(date +%s) - start))}
JSON
rm -rf "$dir"
mv "$dir.part" "$dir"
ln -sfn "$(basename "$dir")" "$out_root/vm-$name"
# Older builds of this image go (~850 MiB each). A running VM keeps its base open, so removing
# the file does not disturb it.
for old in "$out_root/vm-$name"-*; do
  [ -d "$old" ] && [ "$old" != "$dir" ] && rm -rf "$old"
done
say "vm-$name: built $dir in $(($(date +%s) - start)) s (disk $disk_mb MiB, qcow2 $qcow_mb MiB)"
