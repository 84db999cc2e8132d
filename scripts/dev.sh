#!/usr/bin/env bash
# Set up, build and run Cumulus on Debian 12.
#
#   scripts/dev.sh demo   install missing packages, build, run build/bin/fashion_mnist (data-parallel
#                         training with 2 actors) on an embedded cluster
#   scripts/dev.sh test   install missing packages, build, run the whole test suite (ctest), then
#                         fuzz each decoder for 10 s (scripts/fuzz.sh 10, docs/fuzzing.md)
#
# Packages are installed only when missing (needs root, or sudo). The build lives in build/ and is
# configured once (Ninja, RelWithDebInfo); configure build/ yourself first to choose other options,
# e.g. `cmake -S . -B build -G Ninja -DCUMULUS_CUDA=OFF`, and this script keeps them.
set -euo pipefail

usage() {
  echo "usage: scripts/dev.sh demo|test  (demo: build and run the data-parallel training example on an embedded cluster; test: build and run all tests)" >&2
  exit 2
}

[[ $# -eq 1 ]] || usage
mode="$1"
case "$mode" in
  demo | test) ;;
  *) usage ;;
esac

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build"

step() { echo "==> $*"; }
die() {
  echo "==> error: $*" >&2
  exit 1
}

# --- Debian packages -------------------------------------------------------------------------
packages=(cmake ninja-build g++ pkg-config ccache libcaf-dev capnproto libcapnp-dev librocksdb-dev
  libxxhash-dev libgtest-dev libgmock-dev libbenchmark-dev libgloo-dev zlib1g-dev
  dataset-fashion-mnist clang-14 libclang-rt-14-dev libyaml-cpp-dev)
# The shell's line editing (libedit, BSD-licensed; a required build dependency).
packages+=(libedit-dev)
# Real counterparts the tests start on this machine (each test is skipped, with its reason, where
# one is missing): Prometheus scrapes the metrics endpoints (tests/metrics_test.cc); a private
# munged + slurmctld + slurmd runs the slurm provider's jobs (tests/slurm_provider_test.cc,
# tests/provider_e2e_test.cc); rsvg-convert renders the tuner's plots (curve_plot_test.cc).
packages+=(prometheus slurm-wlm munge librsvg2-bin)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done

if ((${#missing[@]} > 0)); then
  if [[ $EUID -eq 0 ]]; then
    sudo=()
  elif command -v sudo >/dev/null 2>&1; then
    sudo=(sudo)
  else
    die "missing Debian packages: ${missing[*]} (run as root, or install them: apt-get install ${missing[*]})"
  fi
  command -v apt-get >/dev/null 2>&1 ||
    die "missing Debian packages: ${missing[*]}, and apt-get is not available (Debian 12 is expected)"
  step "installing missing packages: ${missing[*]}"
  "${sudo[@]}" apt-get update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${missing[@]}"
else
  step "all ${#packages[@]} Debian packages are installed"
fi

# --- configure and build ---------------------------------------------------------------------
# ccache keys on paths relative to the checkout (and not on the build directory), so another
# checkout of the same sources (CI's fresh clone) hits what this one cached. Also for the fuzz
# build and the examples' build below, which inherit these.
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=true
if [[ ! -f "$build/build.ninja" ]]; then
  if [[ -f "$build/CMakeCache.txt" ]] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$build/CMakeCache.txt"; then
    die "$build was configured with another CMake generator; remove it (rm -rf build) and run again"
  fi
  step "configuring $build (Ninja, RelWithDebInfo)"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
step "building with $(nproc) jobs"
cmake --build "$build" -j "$(nproc)"

# --- run -------------------------------------------------------------------------------------
case "$mode" in
  demo)
    demo="$build/bin/fashion_mnist"
    [[ -x "$demo" ]] || die "$demo was not built"
    step "running $demo"
    "$demo"
    ;;
  test)
    step "running the test suite (ctest)"
    status=0
    ctest --test-dir "$build" --output-on-failure -j 2 --timeout 300 || status=$?
    if ((status != 0)); then
      step "tests failed (ctest exit status $status)"
      exit "$status"
    fi
    # Every decoder of outside bytes, fuzzed for a bounded time (docs/fuzzing.md; its own build in
    # build-fuzz/ with clang-14; scripts/fuzz.sh 600 fuzzes longer).
    step "fuzzing each decoder for 10 s (scripts/fuzz.sh 10)"
    "$root/scripts/fuzz.sh" 10 || {
      step "fuzzing found a problem (reproducers in build-fuzz/fuzz-artifacts)"
      exit 1
    }
    # A user's program builds outside this tree: install, then build examples/ as a project of
    # its own against the installed package (find_package(Cumulus)) and run one on an embedded
    # cluster.
    prefix="$build/install"
    step "installing into $prefix and building examples/ against it (find_package(Cumulus))"
    rm -rf "$prefix" "$build/examples-installed"
    cmake --install "$build" --prefix "$prefix" >/dev/null
    launcher=()
    if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
    cmake -S "$root/examples" -B "$build/examples-installed" -G Ninja \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_PREFIX_PATH="$prefix" "${launcher[@]}" >/dev/null
    cmake --build "$build/examples-installed" -j "$(nproc)"
    step "running the installed build of examples/tasks"
    # The modules named by path: the build tree's lib/, where the loader also looks, must not
    # stand in for an install that lacks them.
    export CUMULUS_ROCKSDB_MODULE="$prefix/lib/libcumulus_rocksdb.so"
    export CUMULUS_GLOO_MODULE="$prefix/lib/libcumulus_gloo.so"
    env -u CUMULUS_ADDRESS CUMULUS_LOG_LEVEL=warn "$build/examples-installed/tasks" || {
      step "examples/tasks built against the installed package failed"
      exit 1
    }
    # Two data-parallel workers: a collective group, so Gloo's module is loaded from the prefix.
    step "running the installed build of examples/fashion_mnist with 2 workers (Gloo's module)"
    env -u CUMULUS_ADDRESS CUMULUS_LOG_LEVEL=warn "$build/examples-installed/fashion_mnist" \
      --workers 2 --epochs 1 --train-limit 2000 || {
      step "examples/fashion_mnist built against the installed package failed"
      exit 1
    }
    step "all tests passed"
    exit 0
    ;;
esac
