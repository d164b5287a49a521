#!/usr/bin/env bash
# compile-kernels.sh: build one CUDA kernel source into a fatbin and write
# its manifest, or compile-check sources for every target architecture.
#
#   scripts/compile-kernels.sh SOURCE.cu OUTPUT.fatbin
#       writes OUTPUT.fatbin       cubins for sm_80, sm_89, sm_90 + PTX compute_90
#              OUTPUT.fatbin.json  manifest: source hashes, nvcc version, flags, archs
#              OUTPUT.ptxas.txt    ptxas resource report (registers, spills, smem)
#   scripts/compile-kernels.sh --check SOURCE.cu...
#       compiles each source for sm_80, sm_89 and sm_90 separately, warnings
#       as errors, and writes nothing.
#
# Environment: NVCC (default nvcc), NVCC_HOST_FLAGS (extra flags such as
# "-ccbin g++-11" or "-allow-unsupported-compiler" for a host compiler nvcc
# does not know), KERNEL_ARCHS ("portable", the default: the targets above;
# "sm_90a": one arch-specific Hopper cubin, no PTX, which needs nvcc >= 12.0,
# for kernels that use wgmma or setmaxnreg). Run from anywhere; paths are taken relative to the
# repository root, which is where the manifest's paths start.
#
# The manifest's source_sha256 is the SHA-256 of the lines
# "<sha256 of file>  <path>\n" for the source and every header under this
# repository that it includes, sorted by path (the output of sha256sum). The
# Go side recomputes it from the sources embedded in the binary and refuses
# to run a fatbin built from other sources.
set -euo pipefail

NVCC=${NVCC:-nvcc}
NVCC_HOST_FLAGS=${NVCC_HOST_FLAGS:-}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
INCLUDE_DIR=cudakit/gpu/kernels
FLAGS=(-std=c++17 -O3 -I"$INCLUDE_DIR")
case "${KERNEL_ARCHS:-portable}" in
  portable)
    GENCODE=(arch=compute_80,code=sm_80 arch=compute_89,code=sm_89 arch=compute_90,code=sm_90 arch=compute_90,code=compute_90)
    CUBINS=(sm_80 sm_89 sm_90)
    PTX=(compute_90)
    CHECK_SMS=(80 89 90)
    ;;
  sm_90a)
    GENCODE=(arch=compute_90a,code=sm_90a)
    CUBINS=(sm_90a)
    PTX=()
    CHECK_SMS=(90a)
    ;;
  *)
    echo "compile-kernels: KERNEL_ARCHS must be portable or sm_90a, not $KERNEL_ARCHS" >&2
    exit 1
    ;;
esac

cd "$ROOT"

die() { echo "compile-kernels: $*" >&2; exit 1; }

# shellcheck disable=SC2086 # NVCC_HOST_FLAGS is a list of words
nvcc_() { "$NVCC" $NVCC_HOST_FLAGS "$@"; }

nvcc_version() { nvcc_ --version | grep -E 'release' | sed 's/^[[:space:]]*//'; }

# repo_sources prints the source and the headers it includes that live in
# this repository, as repository-relative paths, sorted.
repo_sources() {
  local src=$1
  nvcc_ "${FLAGS[@]}" -M "$src" -o /dev/stdout |
    sed 's/^[^:]*://' | tr ' \\' '\n\n' | sed '/^$/d' |
    while read -r dep; do
      case "$dep" in
        "$ROOT"/*) dep=${dep#"$ROOT"/} ;;
        /*) continue ;;
      esac
      [ -f "$dep" ] && echo "${dep#./}"
    done | LC_ALL=C sort -u
}

json_list() {
  local first=1 item
  printf '['
  for item in "$@"; do
    [ $first = 1 ] || printf ', '
    printf '"%s"' "$item"
    first=0
  done
  printf ']'
}

write_manifest() {
  local src=$1 out=$2 manifest=$3
  local listing files=() first=1 path
  mapfile -t files < <(repo_sources "$src")
  [ ${#files[@]} -gt 0 ] || die "no sources found for $src"
  listing=$(sha256sum "${files[@]}")
  {
    printf '{\n'
    printf '  "schema": 1,\n'
    printf '  "kernel": "%s",\n' "$src"
    printf '  "fatbin_sha256": "%s",\n' "$(sha256sum "$out" | cut -d' ' -f1)"
    printf '  "source_sha256": "%s",\n' "$(printf '%s\n' "$listing" | sha256sum | cut -d' ' -f1)"
    printf '  "sources": [\n'
    for path in "${files[@]}"; do
      [ $first = 1 ] || printf ',\n'
      printf '    {"path": "%s", "sha256": "%s"}' "$path" "$(sha256sum "$path" | cut -d' ' -f1)"
      first=0
    done
    printf '\n  ],\n'
    printf '  "nvcc_version": "%s",\n' "$(nvcc_version)"
    printf '  "flags": %s,\n' "$(json_list "${FLAGS[@]}")"
    printf '  "gencode": %s,\n' "$(json_list "${GENCODE[@]}")"
    printf '  "cubins": %s,\n' "$(json_list "${CUBINS[@]}")"
    printf '  "ptx": %s\n' "$(json_list "${PTX[@]}")"
    printf '}\n'
  } >"$manifest.tmp"
  mv "$manifest.tmp" "$manifest"
}

build() {
  local src=$1 out=$2
  [ -f "$src" ] || die "no such source: $src"
  local gencode_flags=() g
  for g in "${GENCODE[@]}"; do gencode_flags+=(-gencode "$g"); done
  echo "nvcc $src -> $out (ptxas report: ${out%.fatbin}.ptxas.txt)"
  nvcc_ "${FLAGS[@]}" --threads 0 "${gencode_flags[@]}" -Xptxas -v -fatbin -o "$out.tmp" "$src" 2>"${out%.fatbin}.ptxas.txt" ||
    { cat "${out%.fatbin}.ptxas.txt" >&2; rm -f "$out.tmp"; die "nvcc failed on $src"; }
  mv "$out.tmp" "$out"
  write_manifest "$src" "$out" "$out.json"
}

check() {
  local src sm
  CHECK_DIR=$(mktemp -d)
  trap 'rm -rf "$CHECK_DIR"' EXIT
  for src in "$@"; do
    for sm in "${CHECK_SMS[@]}"; do
      echo "check $src sm_$sm"
      nvcc_ "${FLAGS[@]}" -Werror all-warnings -gencode "arch=compute_$sm,code=sm_$sm" -cubin -o "$CHECK_DIR/out.cubin" "$src"
    done
  done
}

case "${1:-}" in
  --check)
    shift
    [ $# -gt 0 ] || die "--check needs at least one source"
    check "$@"
    ;;
  "" | -h | --help)
    sed -n '2,24p' "$0"
    ;;
  *)
    [ $# -eq 2 ] || die "usage: $0 SOURCE.cu OUTPUT.fatbin | --check SOURCE.cu..."
    build "$1" "$2"
    ;;
esac
