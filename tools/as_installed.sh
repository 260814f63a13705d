#!/usr/bin/env bash
# make test-installed: the library as a user installs it. Builds the wheel (in build/wheel/, never
# the editable install's folder), installs it with [demo] into a fresh virtualenv in a temporary
# folder outside the source tree, and there runs `mssql-cdc --version`, the demo and the
# README's tour (twice, as a user would run it again). Delta's jars are not taken from the
# project's cache: Spark fetches them from Maven Central as for any pip user (decision 0905).
#
#   tools/as_installed.sh pinned [PYTHON]   constraints/pinned.txt (default python3.11), and the demo
#   tools/as_installed.sh newest [PYTHON]   the newest set pyproject's ranges allow, resolved now
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-pinned}
python_bin=${2:-python3.11}
case "$mode" in pinned | newest) ;; *) echo "as-installed: mode is pinned or newest, not '$mode'" >&2; exit 2 ;; esac
command -v "$python_bin" >/dev/null || { echo "as-installed: $python_bin not found" >&2; exit 2; }
say() { printf 'as-installed (%s, %s): %s\n' "$mode" "$("$python_bin" -c 'import platform; print(platform.python_version())')" "$*"; }

export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=1
# nothing of the development environment may leak into the user's
unset MSSQL_CDC_JARS PYTHONPATH SPARK_HOME VIRTUAL_ENV PYSPARK_PYTHON PYSPARK_DRIVER_PYTHON SPARK_REMOTE
work=$(mktemp -d "${TMPDIR:-/tmp}/mssql-cdc-installed-XXXXXX")
trap 'rm -rf "$work"' EXIT
dist=$root/build/installed/dist-$mode
rm -rf "$dist" && mkdir -p "$dist"

say "fresh virtualenv in $work/venv"
"$python_bin" -m venv "$work/venv"
venv_py=$work/venv/bin/python
"$venv_py" -m pip install -q --upgrade pip

# The wheel is built in a build environment that stays in build/installed, not in an isolated
# one under a new random folder each time: ccache hashes the include paths, and only paths
# below CCACHE_BASEDIR hash alike from run to run (an isolated build recompiled everything).
pyver=$("$python_bin" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
buildenv=$root/build/installed/buildenv-$pyver
if [ ! -x "$buildenv/bin/python" ]; then
  "$python_bin" -m venv "$buildenv"
  "$buildenv/bin/python" -m pip install -q -c "$root/constraints/pinned.txt" scikit-build-core nanobind
fi
say "building the wheel"
"$buildenv/bin/python" -m pip wheel -q --no-build-isolation --no-deps -w "$dist" "$root"
wheel=$(ls "$dist"/mssql_cdc-*.whl)

[ "$mode" = pinned ] && export PIP_CONSTRAINT=$root/constraints/pinned.txt

say "installing $(basename "$wheel")[demo]"
"$venv_py" -m pip install -q "$wheel[demo]"
"$venv_py" -m pip freeze > "$root/build/installed/freeze-$mode.txt"  # what was tested
unset PIP_CONSTRAINT

cd "$work"  # so nothing is imported from the source tree
export PATH="$work/venv/bin:$PATH"
say "mssql-cdc --version: $(mssql-cdc --version)"
origin=$("$venv_py" -c 'from mssql_cdc.core.classpath import delta_classpath; print(delta_classpath().where)')
say "Delta for local sessions: $origin"
case "$origin" in io.delta:*) ;; *) echo "as-installed: expected Delta from Maven, got $origin" >&2; exit 1 ;; esac

if [ "$mode" = pinned ]; then
  say "mssql-cdc demo"
  mssql-cdc demo --out "$work/demo" > "$work/demo.log" 2>&1 || { cat "$work/demo.log"; exit 1; }
  grep -q "bronze latest image vs source: EQUAL" "$work/demo.log" || { cat "$work/demo.log"; exit 1; }
  [ -s "$work/demo/retention-headroom.png" ] || { echo "as-installed: the demo drew no chart" >&2; exit 1; }
fi

"$venv_py" "$root/tools/readme_tour.py" > "$work/tour.py"
runs="1 2"
[ "$mode" = newest ] && runs=1  # running twice is checked on the pinned set; CI time is short
for run in $runs; do
  say "the README's tour, run $run"
  "$venv_py" "$work/tour.py" > "$work/tour-$run.log" 2>&1 || { cat "$work/tour-$run.log"; exit 1; }
done
say "passed"
