#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, docs/fuzzing.md) with clang-14 in build-fuzz/ and runs
# each for SECONDS (default 20) over its checked-in corpus, tests/fuzz/corpus/<target>/.
#
#   scripts/fuzz.sh [SECONDS] [--update-corpus] [--make-seeds] [TARGET...]
#
#   --update-corpus  merge the new inputs that add coverage into the checked-in corpus (otherwise
#                    they stay in a temporary directory and are dropped)
#   --make-seeds     first rewrite each target's seed-* files from its --make-seeds mode
#   TARGET...        only these targets (default: all)
#
# Exits non-zero if a target crashed, hung or ran out of memory, printing the reproducer; run it
# again with `build-fuzz/bin/<target> <reproducer>`. Installs clang-14 and libclang-rt-14-dev
# when missing (needs root, or sudo).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-fuzz"
corpus_root="$root/tests/fuzz/corpus"
all_targets=(fuzz_frame fuzz_core_message fuzz_control_records fuzz_store_request fuzz_transfer
  fuzz_deserialize)

seconds=20
update=0
make_seeds=0
targets=()
for a in "$@"; do
  case "$a" in
    --update-corpus) update=1 ;;
    --make-seeds) make_seeds=1 ;;
    [0-9]*) seconds="$a" ;;
    fuzz_*) targets+=("$a") ;;
    *)
      echo "usage: scripts/fuzz.sh [SECONDS] [--update-corpus] [--make-seeds] [TARGET...]" >&2
      exit 2
      ;;
  esac
done
((${#targets[@]} > 0)) || targets=("${all_targets[@]}")

step() { echo "==> $*"; }
die() {
  echo "==> error: $*" >&2
  exit 1
}

# --- Debian packages -------------------------------------------------------------------------
packages=(clang-14 libclang-rt-14-dev)
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
  step "installing missing packages: ${missing[*]}"
  "${sudo[@]}" apt-get update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${missing[@]}"
fi

# --- configure and build ---------------------------------------------------------------------
if [[ ! -f "$build/build.ninja" ]]; then
  step "configuring $build (clang-14, libFuzzer + ASan + UBSan)"
  launcher=()
  if command -v ccache >/dev/null 2>&1; then
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DCUMULUS_FUZZ=ON \
    -DCUMULUS_BUILD_TESTS=OFF -DCUMULUS_BUILD_BENCH=OFF -DCUMULUS_CUDA=OFF "${launcher[@]}" >/dev/null
fi
step "building ${targets[*]}"
nice cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"

# --- run -------------------------------------------------------------------------------------
work="$(mktemp -d "${TMPDIR:-/tmp}/cumulus-fuzz-XXXXXX")"
trap 'rm -rf "$work"' EXIT
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"
failed=()
for t in "${targets[@]}"; do
  bin="$build/bin/$t"
  corpus="$corpus_root/$t"
  mkdir -p "$corpus" "$work/$t"
  if ((make_seeds)); then
    rm -f "$corpus"/seed-*
    "$bin" --make-seeds="$corpus" >/dev/null
  fi
  step "$t: ${seconds} s over $(find "$corpus" -type f | wc -l) inputs in ${corpus#"$root"/}"
  rm -f "$artifacts/$t-"*
  status=0
  # New inputs go to the first directory (temporary); the checked-in corpus is only read.
  (cd "$work" && nice "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts/$t-" "$work/$t" "$corpus" \
    >"$work/$t.log" 2>&1) || status=$?
  grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$work/$t.log" | sed "s/^/    /" || true
  if ((status != 0)); then
    tail -n 60 "$work/$t.log" >&2
    for f in "$artifacts/$t-"*; do
      [[ -e "$f" ]] && echo "==> $t FAILED (exit $status): reproducer $f (run: $bin $f)" >&2
    done
    failed+=("$t")
    continue
  fi
  if ((update)); then
    before=$(find "$corpus" -type f | wc -l)
    "$bin" -merge=1 "$corpus" "$work/$t" >"$work/$t.merge.log" 2>&1 ||
      die "merging new inputs of $t failed: $(tail -n 5 "$work/$t.merge.log")"
    step "$t: corpus $before -> $(find "$corpus" -type f | wc -l) inputs"
  fi
done

if ((${#failed[@]} > 0)); then
  step "fuzzing found problems in: ${failed[*]} (reproducers in ${artifacts#"$root"/})"
  exit 1
fi
step "no target crashed, hung or ran out of memory (${seconds} s each)"
