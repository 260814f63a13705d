#!/usr/bin/env bash
# make setup: install everything the project needs, once. Quiet when nothing is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'setup: %s\n' "$*"; }

apt_packages=(g++ ccache cmake ninja-build libsqlite3-dev libssl-dev googletest libgtest-dev maven pkg-config clang-format
  libltdl7  # mssql-python's bundled ODBC driver loads libltdl
  freetds-bin)  # FreeTDS's tsql runs Microsoft's CDC walkthrough against `emulator serve`
if ! command -v javac >/dev/null 2>&1 || ! javac -version 2>&1 | grep -q ' 17\.'; then
  apt_packages+=(openjdk-17-jdk-headless)
fi
missing=()
for pkg in "${apt_packages[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if ((${#missing[@]})); then
  say "installing Debian packages: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

python_bin=$(command -v python3.11 || true)
[ -n "$python_bin" ] || { echo "setup: Python 3.11 is required (python3.11 not found on PATH)" >&2; exit 1; }
if [ ! -x .venv/bin/python ]; then
  say "creating .venv with $python_bin"
  "$python_bin" -m venv .venv
fi

# The editable install rebuilds the extension on import when C++ changes, so a reinstall is
# needed only when the package metadata changes.
stamp=.venv/.mssql-cdc-installed
want=$(cat pyproject.toml constraints/pinned.txt | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || ! .venv/bin/python -c 'import mssql_cdc._native' 2>/dev/null; then
  say "installing the package and its pinned dependencies into .venv"
  .venv/bin/pip install -q --upgrade pip >/dev/null
  .venv/bin/pip install -q -c constraints/pinned.txt scikit-build-core nanobind setuptools wheel
  .venv/bin/pip install -q -c constraints/pinned.txt --no-build-isolation -e '.[dev]'
  echo "$want" > "$stamp"
fi

.venv/bin/python tools/resolve_jars.py

# Debezium's SQL Server connector in a small harness (tests/debezium): its jars from Maven
# Central into ~/.m2 and target/, once; rebuilt when the harness's sources change.
.venv/bin/python -c 'from tests.debezium import harness; harness.build()'
