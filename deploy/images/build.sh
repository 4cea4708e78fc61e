#!/usr/bin/env bash
# Builds Troupe's sandbox images offline (no registry is ever contacted).
#
#   deploy/images/build.sh --all            build every image (parents first)
#   deploy/images/build.sh python busybox   build the named images (and their parents)
#   deploy/images/build.sh --print-tag NAME print the content-hashed tag NAME would get; no build
#   deploy/images/build.sh --list           list the image names
#   options: --force (rebuild even when the hashed tag exists), --no-install (never apt-get)
#
# One folder per image. A folder holds either
#   rootfs.sh       run as `rootfs.sh <empty-dir>` to populate a root filesystem, which is then
#                   `docker import`ed with the Dockerfile instructions listed in import.changes
# or
#   Dockerfile      built with `docker build --network host` (so apt reaches the Debian mirror);
#                   `parent` names the image it starts FROM, passed as --build-arg BASE=<tag>
# and optionally `requires`: Debian packages the recipe needs on the build host (installed with
# apt-get when missing and running as root).
#
# Every image is tagged troupe-<name>:<hash> and troupe-<name>:latest, where <hash> is the first
# 12 hex digits of the sha256 over the recipe folder's files (names and contents) and the parent's
# hash. A build is skipped when the hashed tag already exists. Progress goes to stdout as
# `[images] <name>: ...` lines; errors go to stderr and exit non-zero.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# Bump when the meaning of a recipe changes without its files changing (e.g. this script's
# import logic), so every image gets a new hash.
recipe_format=1

if [ -n "${DOCKER:-}" ]; then
  docker_bin="$DOCKER"
elif [ -x /usr/bin/docker ]; then
  # The Debian docker.io client matches the engine and has the classic builder.
  docker_bin=/usr/bin/docker
else
  docker_bin=docker
fi

say() { printf '[images] %s\n' "$*"; }
die() {
  printf 'build.sh: %s\n' "$*" >&2
  exit 1
}

list_images() {
  local d
  for d in "$here"/*/; do
    d="${d%/}"
    if [ -f "$d/rootfs.sh" ] || [ -f "$d/Dockerfile" ]; then basename "$d"; fi
  done
}

valid_name() { [[ "$1" =~ ^[a-z0-9][a-z0-9-]*$ ]] && [ -d "$here/$1" ]; }

parent_of() {
  if [ -f "$here/$1/parent" ]; then tr -d ' \n\r\t' <"$here/$1/parent"; fi
}

declare -A hash_cache=()
recipe_hash() {
  local name="$1" parent parent_hash="" files
  if [ -n "${hash_cache[$name]:-}" ]; then
    printf '%s' "${hash_cache[$name]}"
    return
  fi
  parent="$(parent_of "$name")"
  if [ -n "$parent" ]; then
    valid_name "$parent" || die "image '$name' names unknown parent '$parent' in $name/parent"
    parent_hash="$(recipe_hash "$parent")"
  fi
  files="$(cd "$here/$name" && find . -type f -printf '%P\n' | LC_ALL=C sort)"
  local h
  h="$(
    {
      printf 'troupe-image-format %s\nparent %s\n' "$recipe_format" "$parent_hash"
      while IFS= read -r f; do
        [ -n "$f" ] || continue
        printf 'file %s %s\n' "$f" "$(sha256sum <"$here/$name/$f" | cut -d' ' -f1)"
      done <<<"$files"
    } | sha256sum | cut -c1-12
  )"
  hash_cache[$name]="$h"
  printf '%s' "$h"
}

image_exists() { "$docker_bin" image inspect "$1" >/dev/null 2>&1; }

ensure_requires() {
  local name="$1" req="$here/$1/requires" missing=() pkg
  [ -f "$req" ] || return 0
  while read -r pkg; do
    [ -n "$pkg" ] || continue
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done <"$req"
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$no_install" = 1 ] || [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    die "image '$name' needs the Debian packages: ${missing[*]} (as root: apt-get install -y ${missing[*]})"
  fi
  say "$name: installing build dependencies: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  }
}

build_rootfs() {
  local name="$1" tag="$2" hash="$3" dir changes=()
  [ "$(id -u)" = 0 ] || die "image '$name' builds a root filesystem: run as root"
  dir="$(mktemp -d "${TMPDIR:-/tmp}/troupe-rootfs-$name.XXXXXX")"
  scratch_dirs+=("$dir")
  say "$name: populating root filesystem"
  bash "$here/$name/rootfs.sh" "$dir/root"
  if [ -f "$here/$name/import.changes" ]; then
    while IFS= read -r line; do
      [ -n "$line" ] && [ "${line:0:1}" != '#' ] && changes+=(--change "$line")
    done <"$here/$name/import.changes"
  fi
  changes+=(--change "LABEL troupe.image=$name troupe.recipe-hash=$hash")
  say "$name: importing into $tag"
  tar -C "$dir/root" --numeric-owner -c . | "$docker_bin" import "${changes[@]}" - "$tag" >/dev/null
  remove_scratch "$dir"
}

# A failed debootstrap can leave proc/sys mounted inside the scratch root: unmount before rm.
remove_scratch() {
  local d="$1" m
  while read -r m; do umount -l "$m" 2>/dev/null || true; done < <(
    awk -v p="$d/" 'index($2, p) == 1 { print $2 }' /proc/mounts | sort -r
  )
  rm -rf "$d"
}
scratch_dirs=()
cleanup() {
  local d
  for d in "${scratch_dirs[@]}"; do [ -d "$d" ] && remove_scratch "$d"; done
  return 0
}
trap cleanup EXIT

build_dockerfile() {
  local name="$1" tag="$2" hash="$3" parent args=()
  parent="$(parent_of "$name")"
  if [ -n "$parent" ]; then args+=(--build-arg "BASE=troupe-$parent:$(recipe_hash "$parent")"); fi
  say "$name: docker build (network host)"
  DOCKER_BUILDKIT=0 "$docker_bin" build --network host --force-rm "${args[@]}" \
    --label "troupe.image=$name" --label "troupe.recipe-hash=$hash" \
    -t "$tag" "$here/$name" | sed -u "s/^/[images] $name: /"
}

declare -A done_images=()
build_one() {
  local name="$1" parent hash tag start
  [ -n "${done_images[$name]:-}" ] && return 0
  parent="$(parent_of "$name")"
  if [ -n "$parent" ]; then build_one "$parent"; fi
  hash="$(recipe_hash "$name")"
  tag="troupe-$name:$hash"
  if [ "$force" = 0 ] && image_exists "$tag"; then
    say "$name: $tag is up to date"
  else
    start=$(date +%s)
    ensure_requires "$name"
    if [ -f "$here/$name/rootfs.sh" ]; then
      build_rootfs "$name" "$tag" "$hash"
    else
      build_dockerfile "$name" "$tag" "$hash"
    fi
    say "$name: built $tag in $(($(date +%s) - start)) s"
  fi
  "$docker_bin" tag "$tag" "troupe-$name:latest"
  done_images[$name]=1
}

names=()
force=0
no_install=0
print_tag=0
all=0
for arg in "$@"; do
  case "$arg" in
    --all) all=1 ;;
    --force) force=1 ;;
    --no-install) no_install=1 ;;
    --print-tag) print_tag=1 ;;
    --list)
      list_images
      exit 0
      ;;
    -h | --help)
      sed -n '2,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    -*) die "unknown option '$arg' (see --help)" ;;
    *) names+=("$arg") ;;
  esac
done
if [ "$all" = 1 ]; then mapfile -t names < <(list_images); fi
[ ${#names[@]} -gt 0 ] || die "name the images to build, or --all (images: $(list_images | tr '\n' ' '))"
for n in "${names[@]}"; do
  valid_name "$n" || die "unknown image '$n' (images: $(list_images | tr '\n' ' '))"
done

if [ "$print_tag" = 1 ]; then
  for n in "${names[@]}"; do printf 'troupe-%s:%s\n' "$n" "$(recipe_hash "$n")"; done
  exit 0
fi

command -v "$docker_bin" >/dev/null 2>&1 || die "no docker client ('$docker_bin') on PATH"
"$docker_bin" version >/dev/null 2>&1 || die "no Docker engine answers (start dockerd first)"

# One build per image at a time, across processes (tests and the node agent may race).
lock_dir="${TMPDIR:-/tmp}"
for n in "${names[@]}"; do
  exec {lock_fd}>"$lock_dir/troupe-image-build.lock"
  flock "$lock_fd"
  build_one "$n"
  flock -u "$lock_fd"
  exec {lock_fd}>&-
done
