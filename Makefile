# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench lint clean clean-cache

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,cluster,serve]'
	touch $(STAMP)

# The main job on the sample data: the baseline, an assessment of releasing the whole
# table (exit 1 = "unsafe" is the expected verdict here, so it is accepted), then the
# online gate over the request log. Outputs go to demo_out/.
DEMO_OUT := ../demo_out
demo: $(STAMP)
	rm -rf demo_out && mkdir demo_out
	cd sample_data && ../$(BIN)/distgate baseline soldiers.csv -o $(DEMO_OUT)/baseline.csv
	cd sample_data && { ../$(BIN)/distgate assess soldiers.csv --metric kld,mis,cst,dqt --alpha 0.05; test $$? -le 1; }
	cd sample_data && ../$(BIN)/distgate replay soldiers.csv requests.csv \
		-o $(DEMO_OUT)/decisions.csv --plot $(DEMO_OUT)/replay.png

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadgroup

bench: $(STAMP)
	@for script in bench/bench_*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

lint: $(STAMP)
	$(BIN)/ruff check distgate tests bench
	$(BIN)/ruff format --check distgate tests bench

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info demo_out

# numba caches compiled code per defining file and does not notice a change in a function
# it calls from another module: clear the caches after editing the compiled gate.
clean-cache:
	find distgate -name '*.nbi' -delete -o -name '*.nbc' -delete
