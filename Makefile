# The two commands of README.md: `make demo` and `make test`. Both install what is missing and
# bring the local stack (Kafka, PostgreSQL) up first; `make demo` leaves the default namespace's
# supervised worker and its REST API running.
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
	$(BIN)/memwarden stack up --api
	@echo "REST API on http://127.0.0.1:8080 (docs /docs, inspector /inspect): source .venv/bin/activate, then"
	@echo "memwarden principal register user:alice and memwarden token issue user:alice; see README 'REST API'."
	@echo "make down stops everything."

lint: install
	@BIN=$(BIN) bash ops/lint.sh

test: up lint
	$(BIN)/pytest -q -p no:cacheprovider

bench: up
	$(BIN)/python bench/vector_index_bench.py
	$(BIN)/python bench/recall_latency_bench.py
	$(BIN)/python bench/gate_bench.py
