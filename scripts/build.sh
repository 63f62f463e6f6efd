#!/usr/bin/env bash
# Configures and builds Codefy (Release, -O2) into ./build, and the editor
# into web/dist. Incremental: npm ci runs again only when package-lock.json changed.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --parallel "$(nproc)"

# The editor: npm packages as package-lock.json pins them, then Vite's build.
stamp=web/node_modules/.codefy-lock
if [ ! -f "$stamp" ] || ! cmp -s web/package-lock.json "$stamp"; then
  (cd web && npm ci --no-audit --no-fund --loglevel=error)
  cp web/package-lock.json "$stamp"
fi
(cd web && npm run --silent build)
