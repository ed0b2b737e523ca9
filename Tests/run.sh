#!/usr/bin/env bash
# Tests/run.sh -- runs every test: Swift unit and integration tests, then the Python interop suite
# (the real firebase-admin and pyrebase4 packages against the real `canopy serve`).
# Installs what a fresh machine lacks: Debian's libsqlite3-dev and libssl-dev, and a local venv for Python.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
for pkg in libsqlite3-dev libssl-dev; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "run.sh: installing ${missing[*]}"
    apt-get update -qq && apt-get install -y -qq "${missing[@]}"
fi

echo "== swift build"
swift build -Xswiftc -warnings-as-errors 2>&1 | grep -vE '^\[[0-9]+/[0-9]+\]' || true
swift build -Xswiftc -warnings-as-errors >/dev/null

echo "== docc (the catalog's links and the code's citations of it)"
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
        grep -rhoE '\b(Architecture|Protocol|Rules)\.md#[A-Za-z0-9-]+' Sources Tests | sort -u \
            | sed -E 's/^([A-Za-z]+)\.md#(.*)$/- <doc:\1#\2>/'
    } >.build/docc-check/Check.docc/Citations.md
    "$docc_bin" convert .build/docc-check/Check.docc --output-path .build/docc-check/out --warnings-as-errors \
        >.build/docc.log 2>&1 || { cat .build/docc.log; echo "run.sh: broken DocC link or citation"; exit 1; }
else
    echo "run.sh: docc not found next to swift; catalog not checked"
fi

echo "== swift test"
# The whole log goes to .build/swift-test.log; the console gets its summary lines and every failure, never cut off.
CANOPY_BIN="$PWD/.build/debug/canopy" swift test --parallel > .build/swift-test.log 2>&1 || true
grep -E '^(✘|􀢄) |^. Test run with|^error:|: error:' .build/swift-test.log | head -n 200 || true
if ! grep -qE '^. Test run with [0-9]+ tests? .*passed' .build/swift-test.log || grep -qE '^(✘|􀢄) ' .build/swift-test.log; then
    echo "run.sh: swift test failed (whole log: .build/swift-test.log); its last lines:"
    tail -n 40 .build/swift-test.log
    exit 1
fi

echo "== interop (firebase-admin, pyrebase4, firebase 4.0.1; firebase-rest-api in a venv of its own)"
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
.build/interop-venv/bin/python -m pytest -q -p no:cacheprovider Tests/interop --ignore=Tests/interop/rest_api
.build/interop-rest-api-venv/bin/python -m pytest -q -p no:cacheprovider Tests/interop/rest_api
