# The two commands of README.md: `make demo` and `make test`. Both install what is missing first.
PYTHON ?= python3
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
DEBIAN_PACKAGES := gcc make binutils graphviz valgrind
DEMO := out/cholesky.tareador

.PHONY: deps demo test examples benchmark clean

deps:
	@missing=""; for p in $(DEBIAN_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; fi
	@$(PYTHON) -c "import tareador, frida, pytest" 2>/dev/null || \
	  $(PYTHON) -m pip install -q --disable-pip-version-check -e ".[test]"

examples: deps
	$(MAKE) -C examples

demo: examples
	tareador trace -o $(DEMO) -- examples/bin/cholesky 6 32
	tareador graph $(DEMO)
	tareador simulate $(DEMO) --cores 1,2,4,8,16,inf --plot --prv --chrome --csv --dim
	tareador whatif $(DEMO) --factors 2,inf --cores 1,4,16,inf --plot

test: deps
	$(PYTHON) -m pytest -q

benchmark: deps
	$(PYTHON) benchmarks/trace_overhead.py
	$(PYTHON) benchmarks/replay_scale.py

clean:
	$(MAKE) -C examples clean
	rm -rf out benchmarks/out
