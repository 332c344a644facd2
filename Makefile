# The two commands of README.md: `make demo` and `make test`. Both install what is missing and
# bring the local stack (Kafka, PostgreSQL) up first.
VENV ?= .venv
BIN := $(VENV)/bin
LOCOMO ?= ../shared/data/locomo/locomo7.json
SAMPLE := memwarden/evals/samples/sample_conversation.json

.PHONY: install up down demo test lint bench

install:
	@bash ops/install.sh

up: install
	$(BIN)/memwarden stack up

down:
	-$(BIN)/memwarden stack down

demo: up
	@if [ -f "$(LOCOMO)" ]; then \
	  $(BIN)/memwarden eval locomo --data "$(LOCOMO)" --conversations conv-26; \
	else \
	  echo "$(LOCOMO) not found: running on the sample conversation shipped with memwarden"; \
	  $(BIN)/memwarden eval locomo --data "$(SAMPLE)"; \
	fi

lint: install
	@BIN=$(BIN) bash ops/lint.sh

test: up lint
	$(BIN)/pytest -q -p no:cacheprovider

bench: up
	$(BIN)/python bench/vector_index_bench.py
	$(BIN)/python bench/recall_latency_bench.py
	$(BIN)/python bench/gate_bench.py
