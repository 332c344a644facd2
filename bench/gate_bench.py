"""Gate benchmark (issue 3): decisions/s of the pure gate, and end-to-end ingest throughput with the
full governed gate against the walking skeleton's gate, in the same run.

    .venv/bin/python bench/gate_bench.py [--pure N] [--e2e N] [--detector rules|rules+classifier|both]

Pure: N signed ``RecordMemory`` commands decided in a loop, full rules (Ed25519 verification, policy,
tiers, instruction detector, claims) versus the skeleton rules (``verify_signatures=False``, no
detector, no claims). End to end: the same N records published through Kafka into two fresh
namespaces, one worker with ``MEMWARDEN_GATE_MODE=full`` and one with ``skeleton``, timed from the
first publish until every projection caught up (embedding included, as users see it). Prints the
figures and the ratio full / skeleton (issue 3 asks for >= 0.9). Needs the stack up for --e2e.

``--detector`` (issue 12) chooses the full gate's instruction detector: ``rules`` (``rules/1``),
``rules+classifier`` (the rules OR the trained classifier, which embeds every batch's texts in one
call, as the gate worker does) or ``both``. For each, the pure figures are decisions/s with the batch
embedding included (batches of 256) and the p50 latency of one command decided alone (its text
embedded alone).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memwarden.commands import gate  # noqa: E402
from memwarden.commands.gate import GateState, Position  # noqa: E402
from memwarden.settings import Settings  # noqa: E402
from tests import factories as f  # noqa: E402

WORDS = ("tea", "coffee", "chess", "Lyon", "Oslo", "meeting", "budget", "project", "launch", "garden", "dinner",
         "train", "piano", "invoice", "refund", "holiday", "sister", "doctor", "report", "deadline", "recipe",
         "hiking", "museum", "concert")


def texts(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.choice(['I', 'We'])} talked about the {' '.join(rng.sample(WORDS, 4))} on day {i}" for i in range(n)]


class _Nothing:
    def detect(self, text: str) -> object:
        from memwarden.commands.injection import Detection

        return Detection(())

    def claims(self, text: str) -> tuple[()]:
        return ()


def detector_for(choice: str) -> object:
    """The gate's instruction detector for ``choice`` (``rules``, ``rules+classifier`` or ``rules+finetuned``)."""
    from memwarden.bootstrap import Container

    return Container(Settings().model_copy(update={"instruction_detector": choice})).instruction_detector()


def bench_pure(n: int, choice: str = "rules", batch: int = 256) -> dict[str, float]:
    commands = []
    for i, t in enumerate(texts(n)):
        cmd, data = f.sign(f.record(t))
        commands.append((cmd, t, data, Position("mw.commands", 0, i)))
    state = GateState(principals=f.registry())
    now = f.T0 + timedelta(days=1)
    detector = detector_for(choice)
    prime = getattr(detector, "prime", None)
    out = {"held": 0.0}
    for label, kw in (("full", {"detector": detector}), ("skeleton", {"verify_signatures": False,
                                                                      "detector": _Nothing(), "claims": _Nothing()})):
        t0 = time.perf_counter()
        for start in range(0, n, batch):
            chunk = commands[start:start + batch]
            if prime is not None and label == "full":
                prime([text for _, text, _, _ in chunk])  # the gate worker embeds a batch in one call
            for cmd, text, data, pos in chunk:
                d = gate.decide(cmd, text, pos, state, now, signed_bytes=data, content_digest=None, **kw)
                # the synthetic texts are word salad: the classifier may hold a few for review
                assert d.admitted or (label == "full" and prime is not None), d.reasons
                out["held"] += not d.admitted
        out[label] = n / (time.perf_counter() - t0)
    lone = []
    for cmd, text, data, pos in commands[:200]:
        t0 = time.perf_counter()
        if prime is not None:
            prime([text])
        gate.decide(cmd, text, pos, state, now, signed_bytes=data, content_digest=None, detector=detector)
        lone.append(time.perf_counter() - t0)
    out["p50_lone_ms"] = statistics.median(lone) * 1000
    return out


def bench_e2e(n: int, choice: str = "rules") -> dict[str, float]:
    from memwarden.evals.harness import eval_namespace
    from memwarden.keystore import admin_signer
    from memwarden.ops.progress import wait_caught_up
    from memwarden.producers.client import MemwardenClient
    from memwarden.producers.enroll import enroll

    items = texts(n, seed=11)
    base = Settings().model_copy(update={"instruction_detector": choice})
    out = {}
    for mode in ("skeleton", "full", "skeleton", "full"):  # interleaved: warm caches fairly
        with eval_namespace(replace_mode(base, mode), f"gatebench-{mode}", progress=False) as run, \
                MemwardenClient(run.settings) as client:
            users = [f"user:b{i}" for i in range(8)]
            enroll(client, admin_signer(run.settings), [(u, "USER", ()) for u in users])
            t0 = time.perf_counter()
            for i in range(0, n, 500):
                client.record_many([{"principal": users[j % 8], "subject": users[j % 8], "text": items[j]}
                                    for j in range(i, min(n, i + 500))])
            wait_caught_up(run.settings, alive=run.worker.alive)
            rate = n / (time.perf_counter() - t0)
            out[mode] = max(out.get(mode, 0.0), rate)
    return out


def replace_mode(settings: Settings, mode: str) -> Settings:
    return settings.model_copy(update={"gate_mode": mode})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pure", type=int, default=5000)
    parser.add_argument("--e2e", type=int, default=2000, help="0 skips the end-to-end run")
    parser.add_argument("--detector", choices=("rules", "rules+classifier", "rules+finetuned",
                                               "rules+finetuned+multilingual", "both"),
                        default="both")
    args = parser.parse_args()
    choices = ("rules", "rules+classifier") if args.detector == "both" else (args.detector,)
    for choice in choices:
        pure = bench_pure(args.pure, choice)
        print(f"[{choice}] pure gate, {args.pure} signed records: full {pure['full']:.0f} decisions/s, "
              f"skeleton {pure['skeleton']:.0f} decisions/s, ratio {pure['full'] / pure['skeleton']:.2f}; "
              f"one command alone p50 {pure['p50_lone_ms']:.2f} ms; held for review {pure['held']:.0f}", flush=True)
    for choice in choices if args.e2e else ():
        e2e = bench_e2e(args.e2e, choice)
        print(f"[{choice}] end to end, {args.e2e} records (best of 2): full gate {e2e['full']:.1f}/s, skeleton "
              f"gate {e2e['skeleton']:.1f}/s, ratio {e2e['full'] / e2e['skeleton']:.3f} (issue 3 asks >= 0.9)",
              flush=True)


if __name__ == "__main__":
    main()
