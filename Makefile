# The README's commands. Every target installs what it needs through `make setup`.
SHELL := /bin/bash
.DEFAULT_GOAL := help
VENV := .venv
PY := $(VENV)/bin/python
# ccache (when installed) shares compiled objects between clones and build folders: paths
# under this folder are hashed relative to it, and the working folder is left out of the hash.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1
CMAKE_FLAGS := -G Ninja -DMSSQLCDC_BUILD_TESTS=ON -DMSSQLCDC_BUILD_PYTHON=OFF

.PHONY: help setup demo test test-cpp test-cpp-sanitize lint docs test-python test-long test-installed bench chaos clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-18s %s\n", $$1, $$2}'

setup: ## install apt packages, .venv, the package (with its C++ core) and Delta's jars; idempotent
	@tools/setup.sh

demo: setup ## the main job on the embedded emulator: stream, lose data to cleanup, recover
	@$(VENV)/bin/mssql-cdc demo --out demo-output

test: setup ## the whole suite: C++ (plain and sanitized), ruff, mypy, the docs build, pytest unit, Spark, Connect and as-installed tiers
	@$(MAKE) --no-print-directory test-cpp test-cpp-sanitize lint docs test-python test-installed

test-cpp: ## GoogleTest suite of the C++ core
	@cmake -S cpp -B build/cpp $(CMAKE_FLAGS) -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@cmake --build build/cpp
	@build/cpp/mssqlcdc_tests --gtest_brief=1

test-cpp-sanitize: ## GoogleTest suite under AddressSanitizer and UndefinedBehaviorSanitizer
	@cmake -S cpp -B build/cpp-sanitize $(CMAKE_FLAGS) -DCMAKE_BUILD_TYPE=Debug -DMSSQLCDC_SANITIZE=ON >/dev/null
	@cmake --build build/cpp-sanitize
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		build/cpp-sanitize/mssqlcdc_tests --gtest_brief=1

lint: ## ruff (lint and format), mypy --strict and clang-format (.clang-format) over cpp/
	@$(VENV)/bin/ruff check python tests bench tools
	@$(VENV)/bin/ruff format --check python tests bench tools
	@$(VENV)/bin/mypy
	@find cpp \( -name '*.hpp' -o -name '*.cpp' \) -print0 | xargs -0 clang-format --dry-run --Werror

docs: setup ## the guides and the API reference from the docstrings into build/site; a warning fails it
	@$(VENV)/bin/mkdocs build --strict  # not --quiet: it hides the warnings that --strict counts

# The Spark tier in SPARK_WORKERS processes (each its own local[2] session), a file per worker
# at a time; a test whose Python worker did not connect back to its JVM in Spark's fixed 10 s
# (an overloaded host, not the code), or whose task Spark could not deserialize while several
# streams of one job submitted jobs at once (java.io.OptionalDataException, a race inside
# Spark), runs once more, and only then (decision 0980).
SPARK_WORKERS ?= 2
# Files in the order tests/spark/conftest.py gives (its few longest first), not xdist's own.
SPARK_DIST := -n $(SPARK_WORKERS) --dist loadfile --no-loadscope-reorder
SPARK_RERUN := --reruns 1 --only-rerun "Python worker failed to connect back" --only-rerun "CANNOT_OPEN_SOCKET" --only-rerun "java.io.OptionalDataException"

# The emulator profile of the Spark tier's stories that create their emulator through
# tests/support/emulator_profile.py (docs/emulator.md, 'Profiles'): EMULATOR_PROFILE=realistic
# runs the whole tier on a server with capture lag, idle entries and the nightly cleanup job
# (by hand: it is not doubled in CI); REALISTIC_STORIES run on it in every run (decision 1241).
EMULATOR_PROFILE ?= immediate
REALISTIC_STORIES := tests/spark/recovery/test_recovery.py::test_the_lifecycle_bootstrap_loss_resnapshot_guard_and_override tests/spark/source/test_source.py

test-python: ## pytest: tests/unit (no JVM), tests/debezium (Debezium against serve), tests/spark (local Spark and Delta), tests/connect (Spark Connect)
	@$(PY) -m pytest tests/unit -q
	@$(PY) -m pytest tests/debezium -q -p no:cacheprovider  # Debezium's connector against `emulator serve`, about a minute
	@MSSQL_CDC_EMULATOR_PROFILE=$(EMULATOR_PROFILE) $(PY) -m pytest tests/spark -q -m "not long" --durations=20 $(SPARK_DIST) $(SPARK_RERUN)
	@MSSQL_CDC_EMULATOR_PROFILE=realistic $(PY) -m pytest $(REALISTIC_STORIES) -q $(SPARK_RERUN)
	@$(PY) -m pytest tests/connect -q --durations=5  # its own process: the Connect server needs a JVM without a classic session

test-long: setup ## the Spark stories marked long (key-type variants), which `make test` leaves out (decision 1454)
	@MSSQL_CDC_EMULATOR_PROFILE=$(EMULATOR_PROFILE) $(PY) -m pytest tests/spark -q -m long --durations=10 $(SPARK_DIST) $(SPARK_RERUN)

# Python 3.12 for the newest set where the machine has it (pyenv), else 3.11 again.
PY312 := $(firstword $(shell python3.12 -c 'import sys; print(sys.executable)' 2>/dev/null) $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12) python3.11)

test-installed: setup ## the built wheel in a fresh virtualenv: --version, demo and the README's tour (pinned, 3.11), the tour on the newest allowed set (3.12)
	@tools/as_installed.sh pinned python3.11
	@tools/as_installed.sh newest $(PY312)

bench: setup ## run the benchmarks (or ONLY="b4_snapshot ...") and write bench/REPORT.md
	@$(PY) bench/run.py $(ONLY)

# A chaos run (docs/reliability.md): a fan_out job over TDS under random faults for SECONDS,
# then the history checker; SEED replays a run's faults (default: a new seed, printed).
SECONDS ?= 900
SEED ?=
chaos: setup ## a chaos run of SECONDS (default 900) with SEED (default new), then the history checker
	@$(PY) -m tests.support.chaos_run --seconds $(SECONDS) $(if $(SEED),--seed $(SEED))

clean: ## remove build output (keeps .venv and the jar cache)
	rm -rf build
