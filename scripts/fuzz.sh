#!/usr/bin/env bash
# Coverage-guided fuzzing of the policy's parsers and decision (fuzz/).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]      (default 10; a long run: 600)
#
# Runs on the stable toolchain: cargo-fuzz builds with libFuzzer and
# SanitizerCoverage (stable -C flags) but no sanitizer (`-s none`; ASan
# needs nightly's -Zsanitizer). The targets are safe Rust, so panics and
# aborts, which libFuzzer catches either way, are what we look for.
#
# Environment:
#   FUZZ_TARGETS    space-separated subset of the targets (default: all)
#   FUZZ_SANITIZER  cargo-fuzz --sanitizer (default none; others need nightly)
#   FUZZ_ARGS       extra libFuzzer flags, e.g. "-max_len=65536"
#
# The committed seeds in fuzz/corpus/<target>/ are only read; inputs found
# while fuzzing go to fuzz/run/<target>/ (gitignored, kept between runs),
# crashes to fuzz/artifacts/<target>/. Exits non-zero if any target found a
# crash, a timeout or an out-of-memory input, after running every target.
set -euo pipefail

SECONDS_PER_TARGET="${1:-10}"
case "$SECONDS_PER_TARGET" in
'' | *[!0-9]*)
  echo "usage: $0 [SECONDS_PER_TARGET]" >&2
  exit 2
  ;;
esac
SANITIZER="${FUZZ_SANITIZER:-none}"

cd "$(dirname "$0")/../fuzz"

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "==> installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

TARGETS="${FUZZ_TARGETS:-$(cargo fuzz list)}"

echo "==> building fuzz targets (sanitizer: $SANITIZER)"
cargo fuzz build --sanitizer "$SANITIZER"

logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
failed=()
summary=()
for target in $TARGETS; do
  mkdir -p "run/$target" "corpus/$target" "artifacts/$target"
  log="$logs/$target.log"
  echo "==> fuzzing $target for ${SECONDS_PER_TARGET}s"
  status=0
  # First corpus dir is where libFuzzer writes new inputs; the seed dir is read only.
  # shellcheck disable=SC2086 # FUZZ_ARGS is a list of flags
  cargo fuzz run --sanitizer "$SANITIZER" "$target" "run/$target" "corpus/$target" -- \
    -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -print_final_stats=1 \
    ${FUZZ_ARGS:-} >"$log" 2>&1 || status=$?
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
  cov="$(grep -Eo 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9]+[a-zA-Z]*' "$log" | tail -1 || true)"
  line="$(printf '%-18s executions: %-10s exec/s: %-8s %s' "$target" "${execs:-?}" "${rate:-?}" "$cov")"
  summary+=("$line")
  echo "    $line"
  if [ "$status" -ne 0 ]; then
    failed+=("$target")
    echo "!!! $target failed (exit $status):" >&2
    grep -E "panicked at|^thread '|ERROR: libFuzzer|SUMMARY:" "$log" | head -20 >&2 || true
    grep -A3 -E "panicked at" "$log" | head -20 >&2 || true
    artifact="$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)"
    if [ -n "$artifact" ]; then
      case "$artifact" in /*) ;; *) artifact="$PWD/${artifact#./}" ;; esac
      echo "!!! crashing input: $artifact" >&2
      echo "!!! reproduce: (cd fuzz && cargo fuzz run -s $SANITIZER $target $artifact)" >&2
    else
      tail -30 "$log" >&2
    fi
  fi
done

echo
echo "==> summary (${SECONDS_PER_TARGET}s per target)"
printf '    %s\n' "${summary[@]}"
if [ "${#failed[@]}" -ne 0 ]; then
  echo "FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "no crashes"
