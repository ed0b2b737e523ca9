#!/usr/bin/env bash
# build-bundle.sh -- builds the browser bundle test_jssdk_cluster.py loads, from a checkout of the Firebase JS SDK
# monorepo (github.com/firebase/firebase-js-sdk), with Debian's esbuild, outside this repository:
#
#     Tests/interop/jssdk/build-bundle.sh <firebase-js-sdk checkout> <output.js>
#     CANOPY_FIREBASE_JS_BUNDLE=<output.js> .build/browser-venv/bin/python -m pytest -q Tests/interop/jssdk
#
# The bundle holds packages/app, database, component, util and logger exactly as they are in the checkout, and
# sets globalThis.firebaseSDK = {app, database, Component}. The one npm dependency outside the monorepo they need
# in a browser, `idb` (the app package's heartbeat store), is replaced by a stub that reports IndexedDB missing.
set -euo pipefail
src=$(cd "${1:?usage: build-bundle.sh <firebase-js-sdk checkout> <output.js>}" && pwd)
out=${2:?usage: build-bundle.sh <firebase-js-sdk checkout> <output.js>}
command -v esbuild >/dev/null || { echo "build-bundle.sh: esbuild is missing (apt-get install esbuild)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/idb.ts" <<'TS'
export type DBSchema = unknown;
export type IDBPDatabase<T = unknown> = any;
export function openDB<T = unknown>(..._args: unknown[]): Promise<IDBPDatabase<T>> {
  return Promise.reject(new Error('IndexedDB is not available in this bundle'));
}
TS
cat >"$work/entry.ts" <<'TS'
import * as app from '@firebase/app';
import { Component } from '@firebase/component';
import * as database from '@firebase/database';
(globalThis as any).firebaseSDK = { app, database, Component };
TS
p="$src/packages"
cat >"$work/tsconfig.json" <<JSON
{"compilerOptions": {"target": "es2020", "baseUrl": ".", "paths": {
  "@firebase/app": ["$p/app/src/index.ts"], "@firebase/util": ["$p/util/index.ts"],
  "@firebase/logger": ["$p/logger/index.ts"], "@firebase/component": ["$p/component/index.ts"],
  "@firebase/database": ["$p/database/src/index.ts"],
  "@firebase/app-check-interop-types": ["$p/app-check-interop-types/index.d.ts"],
  "@firebase/auth-interop-types": ["$p/auth-interop-types/index.d.ts"], "idb": ["$work/idb.ts"]}}}
JSON
esbuild "$work/entry.ts" --bundle --format=iife --platform=browser --target=es2020 --tsconfig="$work/tsconfig.json" \
    --define:__BUILD_TARGET__='"esm2020"' --log-level=warning --outfile="$out"
echo "build-bundle.sh: $out (@firebase/database $(sed -n 's/.*"version": "\(.*\)".*/\1/p' "$p/database/package.json" | head -n 1))"
