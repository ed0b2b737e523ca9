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
CANOPY_BIN="$PWD/.build/debug/canopy" swift test --no-parallel > .build/swift-test.log 2>&1 || true
grep -E '^(✘|􀢄) |^. Test run with|^error:|: error:' .build/swift-test.log | head -n 200 || true
if ! grep -qE '^. Test run with [0-9]+ tests? .*passed' .build/swift-test.log || grep -qE '^(✘|􀢄) ' .build/swift-test.log; then
    echo "run.sh: swift test failed (whole log: .build/swift-test.log); its last lines:"
    tail -n 40 .build/swift-test.log
    exit 1
fi

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
trap 'kill "$example_server" 2>/dev/null || true; rm -rf "$example_data"' EXIT
example_url=""
for _ in $(seq 100); do
    example_url=$(grep -oE 'serving http://[0-9.]+:[0-9]+' "$example_data/serve.log" | head -n 1 | cut -d' ' -f2 || true)
    [ -n "$example_url" ] && break
    sleep 0.1
done
[ -n "$example_url" ] || { echo "run.sh: canopy serve did not start"; cat "$example_data/serve.log"; exit 1; }
.build/client-package-example/debug/ClientPackageExample "$example_url" "$(cat "$example_data/admin.credential")"
kill "$example_server" && wait "$example_server" 2>/dev/null || true

phase "interop (firebase-admin, pyrebase4, firebase 4.0.1; firebase-rest-api in a venv of its own)"
# firebase-rest-api and PyPI's firebase 4.0.1 both install a module named `firebase`, so each has its own venv.
interop_venv() {  # interop_venv DIR REQUIREMENTS
    if [ ! -x "$1/bin/python" ] || ! cmp -s "$2" "$1/requirements.txt"; then
        rm -rf "$1"
        python3 -m venv "$1"
        "$1/bin/pip" install -q --disable-pip-version-check -r "$2"
        cp "$2" "$1/requirements.txt"
    fi
}
interop_venv .build/interop-venv Tests/interop/requirements.txt
interop_venv .build/interop-rest-api-venv Tests/interop/requirements-rest-api.txt
export CANOPY_BIN="$PWD/.build/debug/canopy"
.build/interop-venv/bin/python -m pytest -q -p no:cacheprovider Tests/interop --ignore=Tests/interop/rest_api \
    --ignore=Tests/interop/jssdk
.build/interop-rest-api-venv/bin/python -m pytest -q -p no:cacheprovider Tests/interop/rest_api

interop_venv .build/browser-venv Tests/browser/requirements.txt
phase "Firebase JS SDK against a cluster (Tests/interop/jssdk; skipped unless CANOPY_FIREBASE_JS_BUNDLE is set)"
# The SDK is not part of Canopy: Tests/interop/jssdk/build-bundle.sh builds the bundle from a firebase-js-sdk checkout.
.build/browser-venv/bin/python -m pytest -q -rs -p no:cacheprovider Tests/interop/jssdk

phase "browser (Tests/browser: the organiser's console in headless Chromium against canopy serve --demo)"
# Screenshots of every step land in .build/browser-screenshots/.
.build/browser-venv/bin/python -m pytest -q -p no:cacheprovider Tests/browser
echo "== done in $((SECONDS - started)) s"
