# The two commands README.md starts with: `make demo` and `make test`. Both install what is missing first.
PYTHON ?= python3
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# chromium and its driver: the report's browser tests (Debian's builds; nothing downloads a browser).
DEBIAN_PACKAGES := gcc make binutils graphviz valgrind chromium chromium-driver
# MPICH and Open MPI, the two ABIs users' clusters have; both coexist (see docs/guide/mpi.md). Their
# recommends (ssh clients, Fortran, ...) are not needed to run ranks on this machine.
MPI_PACKAGES := mpich libmpich-dev openmpi-bin libopenmpi-dev
# The reference BLAS (with CBLAS), LAPACK and LAPACKE: programs whose tasks are library functions
# (docs/guide/tracing.md, library functions as tasks). Single-threaded, so all their work runs on the traced thread.
LINALG_PACKAGES := libblas-dev liblapack-dev liblapacke-dev
PIP := $(PYTHON) -m pip install -q --disable-pip-version-check
DEMO := out/cholesky.tareador
OVERLAP_DEMO := out/patterns.tareador

# $(call apt_install,PACKAGES,OPTIONS): apt-get install those of PACKAGES that are missing.
apt_install = missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(2) $$missing >/dev/null; fi

.PHONY: deps demo test test-fast lint docs examples benchmark clean

# mpi4py's binary wheel runs with Debian's Open MPI (not with Debian's MPICH: docs/guide/mpi.md). It is
# optional (its tests skip without it): no wheel for this Python is a note, not a 4-minute build.
deps:
	@$(call apt_install,$(DEBIAN_PACKAGES),)
	@$(call apt_install,$(MPI_PACKAGES),--no-install-recommends)
	@$(call apt_install,$(LINALG_PACKAGES),--no-install-recommends)
	@$(PYTHON) -c "import tareador, frida, pytest, xdist, build, mkdocs, material, bokeh, selenium, pandas, ruff, mypy" 2>/dev/null || $(PIP) -e ".[test]"
	@$(PYTHON) -c "import mpi4py" 2>/dev/null || $(PIP) --only-binary=mpi4py "mpi4py>=4.1" || \
	  echo "make deps: mpi4py (optional) not installed: no binary wheel for $$($(PYTHON) -V) could be fetched"

examples: deps
	$(MAKE) -C examples

demo: examples
	tareador trace -o $(DEMO) -- examples/bin/cholesky 6 32
	tareador graph $(DEMO)
	tareador simulate $(DEMO) --cores 1,2,4,8,16,inf --plot --prv --chrome --csv --dim
	tareador whatif $(DEMO) --factors 2,inf --cores 1,4,16,inf --plot
	tareador mpirun -np 2 -o out/jacobi.tareador -- examples/bin/mpich/jacobi
	tareador simulate out/jacobi.tareador --machine cluster --plot
	tareador mpirun -np 2 -o $(OVERLAP_DEMO) -- examples/bin/mpich/patterns 256 200 3 copy late
	tareador patterns $(OVERLAP_DEMO)
	tareador overlap $(OVERLAP_DEMO) --machine cluster --bandwidth 1,2,4,8,16,32,100,1000
	tareador hints $(DEMO) --size TS=32
	tareador report $(DEMO)
	tareador report out/jacobi.tareador --machine cluster
	tareador report $(OVERLAP_DEMO) --machine cluster
	@echo "reports (open them in a browser): $(DEMO)/report.html out/jacobi.tareador/report.html $(OVERLAP_DEMO)/report.html"

# The linters first: CI runs `make test`, so a lint error fails it as a test does.
# Tests in parallel, one worker per CPU (at most 4): most of a test's time is a traced program, an
# MPI launch or a browser waiting, and every test keeps its files in its own temporary directory.
test: deps lint
	$(PYTHON) -m pytest -q -n auto --maxprocesses 4

# The fast tier (tests marked fast: pure models, no compiler, Frida or MPI), in seconds.
test-fast: deps
	$(PYTHON) -m pytest -q -m fast

# ruff and mypy as configured in pyproject.toml (what .pre-commit-config.yaml runs too).
lint: deps
	$(PYTHON) -m ruff check .
	$(PYTHON) -m mypy

# The documentation site (docs/, mkdocs.yml) into site/, warnings as errors.
docs: deps
	$(PYTHON) -m mkdocs build --strict -d site

benchmark: deps
	$(PYTHON) benchmarks/trace_overhead.py
	$(PYTHON) benchmarks/trace_scale.py
	$(PYTHON) benchmarks/replay_scale.py
	$(PYTHON) benchmarks/mpi_overhead.py
	$(PYTHON) benchmarks/patterns_overhead.py
	$(PYTHON) benchmarks/explore_recording.py
	$(PYTHON) benchmarks/runtime_costs.py
	$(PYTHON) benchmarks/timing_overhead.py
	$(PYTHON) benchmarks/predict_vs_real.py

clean:
	$(MAKE) -C examples clean
	rm -rf out benchmarks/out site
