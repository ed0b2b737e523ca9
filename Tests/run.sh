#!/usr/bin/env bash
# Tests/run.sh -- runs every test: Swift unit and integration tests, a separate package using the CanopyClient
# product as an app would, then the Python interop suite (the real firebase-admin and pyrebase4 packages),
# the last two against the real `canopy serve`.
# Installs what a fresh machine lacks: Debian's libsqlite3-dev and libssl-dev; prometheus (promtool and a real
# Prometheus server, for the metrics tests), systemd (systemd-analyze, for the unit of `canopy service`) and
# chromium + chromium-driver (headless Chromium for the console's browser tests); nats-server (the JetStream cluster
# the CanopyNATS tests start); redis-server (the peer of `canopy bench fanout|write`); and local venvs for Python.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each phase's heading says how long the run has taken so far (the suite is meant to stay under 15 minutes).
started=$SECONDS
phase() { echo "== $1 (at $((SECONDS - started)) s)"; }
# Everything the run puts in the temporary directory (the tests' data directories, NATS and Chromium profiles,
# SwiftPM's own scratch directories) goes in one directory of its own: removed when the run passes, kept (and named)
# when it fails. Without it, each run left about 2,500 directories in /tmp.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/canopy-run.XXXXXX")
export TMPDIR="$scratch"
# Work run in the background (venvs, the cluster suites, the JS SDK suite) is stopped if the run ends early.
background=()
status=0
cleanup() {
    for pid in ${background[@]+"${background[@]}"}; do
        pkill -P "$pid" 2>/dev/null || true
        kill "$pid" 2>/dev/null || true
    done
    if [ "$status" -eq 0 ]; then
        rm -rf "$scratch"
    else
        echo "run.sh: this run's temporary files are kept in $scratch"
    fi
}
trap 'status=$?; cleanup' EXIT

missing=()
for pkg in libsqlite3-dev libssl-dev prometheus systemd chromium chromium-driver nats-server redis-server; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "run.sh: installing ${missing[*]}"
    # Without recommends: prometheus would pull in node-exporter. The tests start their own Prometheus on a
    # loopback port, so a packaged service that may start with the install is not used.
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
for tool in promtool prometheus systemd-analyze chromium chromedriver nats-server redis-server; do
    command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] || { echo "run.sh: $tool is missing after the install"; exit 1; }
done

# The Python venvs (PyPI downloads, mostly waiting) are made meanwhile, in the background; the interop phase waits.
interop_venv() {  # interop_venv DIR REQUIREMENTS
    if [ ! -x "$1/bin/python" ] || ! cmp -s "$2" "$1/requirements.txt"; then
        rm -rf "$1"
        python3 -m venv "$1"
        "$1/bin/pip" install -q --disable-pip-version-check -r "$2"
        cp "$2" "$1/requirements.txt"
    fi
}
mkdir -p .build
{
    interop_venv .build/interop-venv Tests/interop/requirements.txt
    interop_venv .build/interop-rest-api-venv Tests/interop/requirements-rest-api.txt
    interop_venv .build/browser-venv Tests/browser/requirements.txt
} >.build/venvs.log 2>&1 &
venvs=$!
background+=("$venvs")

phase "swift build"
swift build -Xswiftc -warnings-as-errors 2>&1 | grep -vE '^\[[0-9]+/[0-9]+\]' || true
swift build -Xswiftc -warnings-as-errors >/dev/null

phase "docc (the catalog's links and the code's citations of it)"
# Sources/CanopyServer/CanopyServer.docc links its articles to each other's sections, and code comments cite them
# as `Protocol.md#Hashes`. A copy of the catalog gets one more page linking every cited section; docc then fails on
# any link (or citation) that names a missing article or section.
docc_bin=$(command -v docc || true)
if [ -z "$docc_bin" ] && [ -n "$(command -v swift)" ]; then
    docc_bin="$(dirname "$(readlink -f "$(command -v swift)")")/docc"
fi
if [ -x "$docc_bin" ]; then
    rm -rf .build/docc-check && mkdir -p .build/docc-check
    cp -R Sources/CanopyServer/CanopyServer.docc .build/docc-check/Check.docc
    {
        printf '# Citations\n\nSections cited by code comments.\n\n'
        grep -rhoE '\b(Architecture|Protocol|Rules|Cluster)\.md#[A-Za-z0-9-]+' Sources Tests | sort -u \
            | sed -E 's/^([A-Za-z]+)\.md#(.*)$/- <doc:\1#\2>/'
    } >.build/docc-check/Check.docc/Citations.md
    "$docc_bin" convert .build/docc-check/Check.docc --output-path .build/docc-check/out --warnings-as-errors \
        >.build/docc.log 2>&1 || { cat .build/docc.log; echo "run.sh: broken DocC link or citation"; exit 1; }
else
    echo "run.sh: docc not found next to swift; catalog not checked"
fi

phase "swift test"
# The whole log goes to .build/swift-test.log; the console gets its summary lines and every failure, never cut off.
# Serially: many integration tests block their thread on sockets, and run in parallel on a 2-core machine they
# starve Swift's cooperative pool (two threads), so async tests (the attendee feed) stall for tens of seconds and a
# publish's updates coalesce (FeedTests took 44 s in parallel, 0.14 s serially). Serial: 761 tests in about 110 s.
# The suites that run nats-server clusters (CanopyNATSTests, every *Cluster* suite) mostly wait on leases and
# failovers: they run in a second process, .build/swift-test-cluster.log, alongside the others and the fuzz smoke,
# and are waited for after the client package. (`--filter` and `--skip` with one pattern split the tests exactly;
# `--ignore-lock`: both only read the built products, and SwiftPM's lock on .build would run them one after the other.)
swift build --build-tests -Xswiftc -warnings-as-errors > .build/swift-build-tests.log 2>&1 \
    || { grep -E 'error' .build/swift-build-tests.log | head -n 50; echo "run.sh: the tests do not build"; exit 1; }
cluster_suites='CanopyNATSTests\.|Cluster'
CANOPY_BIN="$PWD/.build/debug/canopy" swift test --skip-build --ignore-lock --no-parallel --filter "$cluster_suites" \
    > .build/swift-test-cluster.log 2>&1 &
cluster_tests=$!
background+=("$cluster_tests")
check_swift_tests() {  # check_swift_tests LOG
    grep -E '^(✘|􀢄) |^. Test run with|^error:|: error:' "$1" | head -n 200 || true
    if ! grep -qE '^. Test run with [0-9]+ tests? .*passed' "$1" || grep -qE '^(✘|􀢄) ' "$1"; then
        echo "run.sh: swift test failed (whole log: $1); its last lines:"
        tail -n 40 "$1"
        exit 1
    fi
}
CANOPY_BIN="$PWD/.build/debug/canopy" swift test --skip-build --ignore-lock --no-parallel --skip "$cluster_suites" \
    > .build/swift-test.log 2>&1 || true
check_swift_tests .build/swift-test.log

phase "fuzz smoke (Tests/fuzz.sh --smoke: each libFuzzer target over its corpus and 3,000 executions)"
# Builds the targets with -sanitize=fuzzer,address in .build/fuzz (a separate scratch path) and fails on any crash,
# leak or timeout; the long runs are `Tests/fuzz.sh --runs 10000000` (README.md, Fuzzing).
bash Tests/fuzz.sh --smoke

phase "client package (Tests/ClientPackageExample: CanopyClient by product name)"
# Its own package and build directory (inside .build); the program runs against `canopy serve` on a loopback port.
# Without manifest caching: a cached build plan misses source files added to the path dependency since.
example_build=(swift build --package-path Tests/ClientPackageExample --scratch-path .build/client-package-example
    --disable-build-manifest-caching -Xswiftc -warnings-as-errors)
"${example_build[@]}" 2>&1 | grep -vE '^\[[0-9]+/[0-9]+\]' || true
"${example_build[@]}" >/dev/null
example_data=$(mktemp -d)
.build/debug/canopy serve --port 0 --data "$example_data" --log-level warning >"$example_data/serve.log" 2>&1 &
example_server=$!
trap 'status=$?; kill "$example_server" 2>/dev/null || true; rm -rf "$example_data"; cleanup' EXIT
example_url=""
for _ in $(seq 100); do
    example_url=$(grep -oE 'serving http://[0-9.]+:[0-9]+' "$example_data/serve.log" | head -n 1 | cut -d' ' -f2 || true)
    [ -n "$example_url" ] && break
    sleep 0.1
done
[ -n "$example_url" ] || { echo "run.sh: canopy serve did not start"; cat "$example_data/serve.log"; exit 1; }
.build/client-package-example/debug/ClientPackageExample "$example_url" "$(cat "$example_data/admin.credential")"
kill "$example_server" && wait "$example_server" 2>/dev/null || true

phase "swift test: the cluster suites (started with the others)"
wait "$cluster_tests" || true
check_swift_tests .build/swift-test-cluster.log

phase "interop (firebase-admin, pyrebase4, firebase 4.0.1; firebase-rest-api in a venv of its own)"
# firebase-rest-api and PyPI's firebase 4.0.1 both install a module named `firebase`, so each has its own venv.
wait "$venvs" || { cat .build/venvs.log; echo "run.sh: the Python venvs could not be made"; exit 1; }
export CANOPY_BIN="$PWD/.build/debug/canopy"
# The Firebase JS SDK suite starts its clusters now and runs alongside interop and browser (it mostly waits on
# failovers); its result is printed and checked last. The SDK is not part of Canopy: it is skipped unless
# CANOPY_FIREBASE_JS_BUNDLE names a bundle (Tests/interop/jssdk/build-bundle.sh builds one from a firebase-js-sdk
# checkout).
.build/browser-venv/bin/python -m pytest -q -rs -p no:cacheprovider Tests/interop/jssdk >.build/jssdk.log 2>&1 &
jssdk=$!
background+=("$jssdk")
.build/interop-venv/bin/python -m pytest -q -p no:cacheprovider Tests/interop --ignore=Tests/interop/rest_api \
    --ignore=Tests/interop/jssdk
.build/interop-rest-api-venv/bin/python -m pytest -q -p no:cacheprovider Tests/interop/rest_api

phase "browser (Tests/browser: the organiser's console in headless Chromium against canopy serve --demo)"
# Screenshots of every step land in .build/browser-screenshots/.
.build/browser-venv/bin/python -m pytest -q -p no:cacheprovider Tests/browser

phase "Firebase JS SDK against a cluster (Tests/interop/jssdk, started with interop)"
jssdk_status=0
wait "$jssdk" || jssdk_status=$?
tail -n 30 .build/jssdk.log
[ "$jssdk_status" -eq 0 ] || { echo "run.sh: the Firebase JS SDK suite failed (whole log: .build/jssdk.log)"; exit 1; }
echo "== done in $((SECONDS - started)) s"
