# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PY := .venv/bin/python
PYTEST_ARGS ?=
# Two pytest-xdist workers (the machine's two cores); each test module runs whole on one worker (tests/conftest.py).
PYTEST_WORKERS ?= 2
# --max-worker-restart=0: a crashed worker (a test killed by its pytest-timeout) ends the run as a failure; with
# restarts, pytest-xdist 3.8 under --dist loadfile waits forever after the crash (seen 14:15, reproduced with a
# test that calls os._exit).
PYTEST_XDIST := -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder --max-worker-restart=0
# One OpenMP/BLAS thread per test process: the workers already fill the cores, and two threads each spin-wait
# (tests/test_estimate.py alone: 26 CPU-s with 2 threads, 14 with 1; BENCHMARKS.md "Test suite").
PYTEST_ENV := OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1

.PHONY: env demo test sample-data bench clean

env:
	@bash scripts/setup_env.sh

demo: env
	$(PY) -m avalign demo

test: env
	$(PYTEST_ENV) $(PY) -m pytest $(PYTEST_XDIST) $(PYTEST_ARGS)

sample-data: env
	$(PY) scripts/make_sample_data.py --out sample_data

clean:
	rm -rf .venv .pytest_cache .hypothesis build *.egg-info
