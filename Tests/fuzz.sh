#!/usr/bin/env bash
# Tests/fuzz.sh -- builds the libFuzzer targets of Tests/Fuzz and runs them (README.md#Fuzzing).
#
#   Tests/fuzz.sh [--smoke | --runs N | --time S] [--fork J] [target...]
#
#   --smoke     each target over its committed corpus plus a few thousand new inputs (what Tests/run.sh runs)
#   --runs N    each target for N executions (the 10-million-execution runs: --runs 10000000)
#   --time S    each target for S seconds
#   --fork J    libFuzzer's fork mode: J child processes share the corpus and the count of executions (a slow
#               target's 10 million in a fraction of the time on J cores); timeouts and out-of-memory inputs
#               fail the run as a crash does
#   target      JSON HTTP WebSocket Wire Rules JWT REST Export NATS (default: all)
#
# The targets build with `-sanitize=fuzzer,address` in their own scratch path, .build/fuzz, so normal builds are
# untouched (they exist in the manifest only with CANOPY_FUZZ set): in debug mode for --smoke, which compiles
# faster and runs few inputs, in release mode for the long runs. Each run starts from the
# committed corpus (Tests/Fuzz/corpus/<target>) and keeps what it finds in .build/fuzz/corpus/<target>; crash,
# leak and timeout inputs go to .build/fuzz/artifacts/, and each run's log to .build/fuzz/<target>.log with
# its figures on the last lines. Exits non-zero if any target crashes, leaks, times out or exceeds 2 GB.
set -euo pipefail
cd "$(dirname "$0")/.."

all=(JSON HTTP WebSocket Wire Rules JWT REST Export NATS)
limit=(-runs=3000)
mode=smoke
config=debug
targets=()
fork=()
while [ $# -gt 0 ]; do
    case "$1" in
        --smoke) limit=(-runs=3000); mode=smoke; config=debug ;;
        --runs) limit=("-runs=$2"); mode=runs; config=release; shift ;;
        --time) limit=("-max_total_time=$2"); mode=time; config=release; shift ;;
        --fork) fork=("-fork=$2" -ignore_timeouts=0 -ignore_ooms=0 -ignore_crashes=0); shift ;;
        -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "fuzz.sh: unknown option $1" >&2; exit 64 ;;
        *) [[ " ${all[*]} " == *" $1 "* ]] || { echo "fuzz.sh: unknown target $1 (${all[*]})" >&2; exit 64; }
           targets+=("$1") ;;
    esac
    shift
done
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")

scratch=.build/fuzz
build=(swift build -c "$config" --scratch-path "$scratch" -Xswiftc -sanitize=fuzzer,address -Xswiftc -enable-testing
    -Xswiftc -warnings-as-errors)
for target in "${targets[@]}"; do
    echo "== fuzz: building Fuzz$target ($config)"
    CANOPY_FUZZ=1 "${build[@]}" --product "Fuzz$target" 2>&1 | grep -vE '^\[[0-9]+/[0-9]+\]|^Building|^Build of|Cannot export local symbol' || true
    CANOPY_FUZZ=1 "${build[@]}" --product "Fuzz$target" >/dev/null 2>&1 \
        || { echo "fuzz.sh: Fuzz$target does not build"; exit 1; }
done

failed=()
mkdir -p "$scratch/artifacts"
for target in "${targets[@]}"; do
    corpus="$scratch/corpus/$target"
    mkdir -p "$corpus"
    options=("${limit[@]}" ${fork[@]+"${fork[@]}"} -rss_limit_mb=2048 -timeout=10 -max_len=2048 -print_final_stats=1
        "-artifact_prefix=$scratch/artifacts/$target-")
    [ -f "Tests/Fuzz/dict/$target.dict" ] && options+=("-dict=Tests/Fuzz/dict/$target.dict")
    log="$scratch/$target.log"
    start=$(date +%s)
    # The Swift runtime's backtracer would race ASan's report (libFuzzer prints the stack itself); ASan records
    # no allocation stacks, which makes runs about 1.5 times faster (rerun a crash file without it for them).
    status=0
    ASAN_OPTIONS=malloc_context_size=0 SWIFT_BACKTRACE=enable=no nice -n 10 "$scratch/$config/Fuzz$target" "${options[@]}" "$corpus" \
        "Tests/Fuzz/corpus/$target" >"$log" 2>&1 || status=$?
    seconds=$(( $(date +%s) - start ))
    runs=$(grep -oE '^stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' \
        || grep -oE '^INFO: fuzzed for [0-9]+ iterations' "$log" | grep -oE '[0-9]+' || echo "?")
    if [ ${#fork[@]} -gt 0 ] && grep -E 'oom/timeout/crash' "$log" | tail -n 1 | grep -qv 'crash: 0/0/0'; then status=1; fi
    rss=$(grep -oE '^stat::peak_rss_mb: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
    cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -n 1 || echo "cov: ?")
    if [ "$status" -eq 0 ]; then
        echo "fuzz: $target ok: $runs runs in ${seconds}s, $cov, peak ${rss} MB"
    else
        failed+=("$target")
        echo "fuzz: $target FAILED (exit $status) after ${seconds}s; log $log:"
        grep -E 'ERROR|SUMMARY|Fatal error|Test unit written' "$log" | head -n 20 || tail -n 20 "$log"
    fi
done
[ ${#failed[@]} -eq 0 ] || { echo "fuzz.sh: failed: ${failed[*]}"; exit 1; }
echo "fuzz.sh: ${#targets[@]} targets, no crash, leak or timeout ($mode)"
