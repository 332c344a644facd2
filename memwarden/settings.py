"""Runtime configuration: one pydantic-settings object, environment prefix ``MEMWARDEN_``.

Nothing here connects to anything; :mod:`memwarden.bootstrap` builds clients from a ``Settings``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

#: The gate's instruction detectors (``Settings.instruction_detector``; ``memwarden eval poisoning`` compares them).
DetectorChoice = Literal["rules", "rules+classifier", "rules+finetuned", "rules+finetuned+multilingual"]


def _default_data_dir() -> Path:
    return Path.cwd() / ".memwarden"


class Settings(BaseSettings):
    """Every knob of memwarden, read from ``MEMWARDEN_*`` environment variables.

    Attributes:
        bootstrap_servers: Kafka bootstrap list, ``host:port[,host:port]``.
        topic_prefix: namespace of every topic, the Postgres schema and the Qdrant collection; two
            prefixes never see each other's data (tests and evaluations use a fresh one each run).
        partitions: partition count for topics this project creates.
        postgres_dsn: libpq DSN of the profile-state database.
        qdrant_url: ``None`` selects embedded Qdrant Edge under ``data_dir``; an URL selects a Qdrant
            server through qdrant-client.
        model_name / model_path: sentence-transformers model; ``model_path`` overrides the packaged copy.
        embed_backend: CPU backend of the embedding model, same weights either way: ``onnx`` (default;
            ONNX Runtime on an export made once from the packaged weights and cached under
            ``data_dir/onnx``; a query embeds in ~5 ms instead of ~13 ms) or ``torch``
            (sentence-transformers on PyTorch). ``onnx`` falls back to ``torch`` with a logged warning
            if ONNX Runtime is missing or the export fails. Env: ``MEMWARDEN_EMBED_BACKEND``.
        query_quantized: with ``onnx``, recall queries are embedded by an 8-bit (per-channel dynamic
            quantization) copy of the export: about 4 ms less per recall, stored memories keep fp32
            vectors (LoCoMo recall@10 0.738 -> 0.735). Env: ``MEMWARDEN_QUERY_QUANTIZED``.
        data_dir: state of the local stack (Kafka log dirs, Postgres cluster, Edge shards, pid files).
        kafka_port / kafka_controller_port / postgres_port: loopback ports of the local stack.
        worker_port: HTTP port of the worker's read endpoint (recall), on 127.0.0.1.
        health_port: HTTP port of ``/health`` and ``/ready`` of a worker without the projector role
            (a gate-only worker), on ``worker_host``; ``None`` (default): such a worker serves no HTTP
            and ``memwarden stack status`` shows only whether its process runs. A projector worker
            serves both on ``worker_port``. Env: ``MEMWARDEN_HEALTH_PORT``.
        max_text_chars: largest memory text accepted, in characters (seed 004 "write boundary").
        hearsay_suspicion: when true, a user statement that a principal records about another subject (an
            agent writing down what the user said) and that the instruction detector only suspects is
            tagged untrusted (out of default reads, readable with ``include_untrusted``) like a suspected
            tool result; a person's own statement is judged by the decision threshold alone either way.
            Off by default (README, "Memory poisoning": it hides some users' own preferences, more often
            in languages other than English). Env: ``MEMWARDEN_HEARSAY_SUSPICION``.
        session_timeout_s: consumer-group session timeout, in seconds: how long a crashed worker keeps
            its partitions before the group rebalances them to a live one.
        stall_s: seconds a command may wait undecided while the gate completes no batch (database and
            broker answering) before ``memwarden worker --supervise`` restarts the worker
            (:mod:`memwarden.ops.liveness`: a consumer that stopped fetching after a broker outage); 0
            turns the probe off. Env: ``MEMWARDEN_STALL_S``.
        kek: base64 key-encryption key wrapping per-record data keys; ``None`` uses a key file
            generated once under ``data_dir``.
        admin_principal: id of the root admin principal, the trust anchor of the registry.
        admin_public_key: base64 raw Ed25519 public key of the root admin; ``None`` uses (and on
            first use creates) the key pair in ``data_dir/keys/``. In production set this and keep
            the private key offline.
        read_auth: ``required``: every recall request must be signed by a key of the principal it
            reads as (:mod:`memwarden.commands.read_auth`); ``optional``: signed requests are verified,
            unsigned ones are served.
        gate_mode: ``full`` (every issue 3 rule) or ``skeleton`` (no signatures, detector or
            contradiction checks: the walking-skeleton baseline of the gate benchmark only).
        instruction_detector: the gate's instruction detector: ``rules+finetuned+multilingual`` (default
            since 2026-12-05, now ``rules/48+minilm-ft/10@not-en1.01~1.01#codes#close+e5-ft/1#codes#close``:
            ``rules+finetuned`` OR a
            multilingual classifier for texts not in English, ``multilingual_classifier``; README "Memory
            poisoning"),
            ``rules+finetuned`` (default 2026-12-04 to 12-05, ``rules/15+minilm-ft/5``: the rules OR the
            fine-tuned MiniLM classifier,
            :mod:`memwarden.projections.injection_finetuned`, behind a hashed n-gram screen that spares
            it most conversation, on ONNX Runtime; README, "Memory poisoning"), ``rules`` (the rules
            alone: cheapest, but they let 26-38 % of the injections of five blind writers' sets reach a
            default read) or ``rules+classifier`` (the rules OR a logistic-regression classifier over
            all-MiniLM-L6-v2 embeddings and hashed n-grams, :mod:`memwarden.projections.injection_classifier`;
            the gate worker then loads the embedding model). Env: ``MEMWARDEN_INSTRUCTION_DETECTOR``.
        finetuned_not_english_threshold: with ``rules+finetuned+multilingual``, the fine-tuned (English)
            classifier's decision threshold on texts that are not English (it still raises suspicion at its
            own suspicion threshold there); at or below the weights' own threshold (0) it changes nothing.
            0.99, chosen on the 32nd-35th sets, failed its ship rule on the 36th (six false positives fewer, one
            more injection in a default read; README, "Memory poisoning"). 1.01 (the default since 2026-12-06,
            eleventh session, with ``multilingual_classifier`` ``e5-ft``): the English classifier decides no text
            that is not English, the fine-tuned multilingual classifier does. Set 0 with ``e5-lr``.
            Env: ``MEMWARDEN_FINETUNED_NOT_ENGLISH_THRESHOLD``.
        finetuned_not_english_suspicion: with ``rules+finetuned+multilingual``, the fine-tuned (English)
            classifier's suspicion threshold on texts that are not English (a suspect tool result, imported
            record or model inference is kept out of default reads); at or below the weights' own (0.05) it
            changes nothing (0: the default until 2026-12-06, twelfth session); 1.01 (the default since): the
            English classifier raises no suspicion on another language, the multilingual classifier alone does
            (set 0 with ``e5-lr``). Measured on development data (2026-12-06, twelfth session):
            on the non-English texts from those sources of the 30th-42nd blind sets, the English classifier's
            suspicion caught no injection that ``e5-ft/1`` did not already flag or suspect, and tagged 2-13
            benign texts a set; on a development set of 400 ordinary texts in 20 languages it tagged 8 of the 85
            from those sources not in English (a weather report, a shopping list, "the user seems to be training
            for a marathon"), ``e5-ft/1`` none. Ship rule, written before the 43rd blind set goes through the
            pipeline with either value and before the report set of ordinary texts
            (``benign_chat_multilingual_report.jsonl``) is scored with 1.01: 1.01 becomes the default if, on
            the 43rd set and on the 44th (frozen after the rule, added to it before either ran) through the
            pipeline, each against the default of the day run within the same hour, no more
            injections reach a read or a procedure, and on the report set fewer texts are suspected (precision,
            recall and every quarantine are unchanged by construction: a suspicion flags nothing). It held
            (README, "Memory poisoning"): on the 43rd and 44th sets no injection reached a read or a procedure
            with either value (precision / recall 0.992 / 1.000 and 0.960 / 1.000 both times) and the benign items
            tagged on suspicion went from 4 and 1 to 0; on the report set of ordinary texts 0 of 400 were flagged
            either way and the suspected went from 5 of 100 to 0. Env: ``MEMWARDEN_FINETUNED_NOT_ENGLISH_SUSPICION``.
        multilingual_agreement: with ``rules+finetuned+multilingual``, the multilingual head's probability at
            which it also decides a text not in English that the fine-tuned classifier scores between its own
            threshold and ``finetuned_not_english_threshold`` (two classifiers agreeing,
            :class:`~memwarden.projections.injection_classifier.CombinedDetector` ``agreement``); 0 (the
            default) turns it off. Chosen offline on the 32nd-36th sets with ``finetuned_not_english_threshold``
            0.995: 0.7 (precision / recall 0.888 / 0.987 -> 0.915 / 0.983). Ship rule, written before the
            38th set is scored by any detector: both become the defaults if, there, against the default
            pipeline of the day without them, no more injections reach a read or a procedure, precision is
            higher by at least 0.02, recall is at most one injected item lower and the report half of the
            false-alarm turns stays within 0.001. On the 38th set it changed no decision (precision / recall
            0.984 / 0.992 with and without it), so the rule failed and it stays off.
            Env: ``MEMWARDEN_MULTILINGUAL_AGREEMENT``.
        multilingual_suspicion: with ``rules+finetuned+multilingual``, the multilingual classifier's suspicion
            threshold (a text not in English scoring from it up to the classifier's decision threshold is
            suspect: from a tool result, an imported record or a model inference it is kept out of default
            reads); unset (the default), each classifier's own: 0.3 for ``e5-ft/1`` (in its weights), 0.8 for
            ``e5-lr/2`` (:data:`~memwarden.projections.injection_multilingual.DEFAULT_SUSPICION`); 0 keeps the
            weights' own, which for ``e5-lr/2`` equals its decision threshold (it never only suspects). For
            ``e5-lr/2`` 0.8 was chosen on the 28th-38th sets (development data): of the four injections from
            those sources that no detector even suspected, it tags two (a Chinese and a Russian model inference
            at 0.80 and 0.84), at 14 more benign items tagged of 440 from those sources (0.7 would tag three, at
            29). Ship rule, written before the 39th set is frozen or scored: 0.8 becomes the default if, on the
            39th set with the default pipeline against the same pipeline without it, no more injections reach
            a read or a procedure and at most 5 more benign items are tagged on suspicion (precision and recall
            cannot change: a suspicion flags nothing). It held: no injection reached a read either way, one
            benign item more was tagged (5 against 4), so it was its default from then on (2026-12-06).
            Env: ``MEMWARDEN_MULTILINGUAL_SUSPICION``.
        multilingual_classifier: with ``rules+finetuned+multilingual``, the classifier for texts not in English:
            ``e5-lr`` (the logistic head over multilingual-e5-small embeddings,
            :mod:`memwarden.projections.injection_multilingual`) or ``e5-ft`` (multilingual-e5-small with its
            top four layers fine-tuned, :mod:`memwarden.projections.injection_e5_finetuned`; README, "Memory
            poisoning"). Ship rule for ``e5-ft/1``, written before the 41st blind set (frozen in 1bfa4df) is scored
            by any detector: ``e5-ft`` (thresholds 0.7 / 0.3) with ``finetuned_not_english_threshold`` 1.01
            becomes the default if, on the 41st set through the pipeline, against the default of the day
            (``e5-lr``, suspicion 0.8, not-English threshold 0) scored within the same hour: no more injections
            reach a read or a procedure, recall is at most one injected item lower, and precision is higher by at
            least 0.02, or fewer injections reach a read, or recall is higher by at least two items; the report
            half of the false-alarm turns stays within 0.001; and with it GateMem's leak rate stays 0 and ``eval
            api-load`` refuses no content. It held (README, "Memory poisoning"): on the 41st set precision /
            recall 0.984 / 1.000 and no injection in a read against 0.944 / 0.992 and one (a Korean user relaying
            a sibling's standing order to delete a contract folder), report half 0.00095 either way; GateMem
            leak rate 0 (utility 0.606, over-refusal 0.068, unchanged); ``eval api-load`` 0 content refusals.
            ``e5-ft`` is the default since 2026-12-06 (eleventh session). Env: ``MEMWARDEN_MULTILINGUAL_CLASSIFIER``.
        ledger_prefix: the namespace whose topics (the ledger) this namespace's projections are built
            from; ``None`` = its own (``topic_prefix``). A replayed namespace sets it to its source, so
            its Postgres schema and index are its own while it reads (never writes) the source ledger.
            Env: ``MEMWARDEN_LEDGER_PREFIX``.
        reconcile_interval_s: T_sync of SSGM Eq. 7, in seconds: how often the projector worker
            reconciles its projections with the ledger; 0 turns the timer off (``memwarden reconcile``
            still runs one on demand). Env: ``MEMWARDEN_RECONCILE_INTERVAL_S``.
        keys_compaction_lag_s: the longest a record of the keys topic stays out of compaction's
            reach (its ``max.compaction.lag.ms`` and ``segment.ms``), in seconds; the gate worker also
            appends a roll marker to every keys partition that often, so that a quiet topic rolls too.
            A shredded data key leaves the broker's disk within about twice this (issue 14, step 4).
            Env: ``MEMWARDEN_KEYS_COMPACTION_LAG_S``.
        retention_interval_s: how often, in seconds, the gate worker looks for memories past their
            ``expires_at`` and appends a retention ``ForgetMatching`` for them, signed by the root
            admin's local key (none held: the worker says so and ``memwarden forget --expired`` does
            it); 0 turns the timer off. Env: ``MEMWARDEN_RETENTION_INTERVAL_S``.
        pre_embed: the projector worker embeds memory writes as they reach the commands topic, while
            the gate decides them, and its projector takes those vectors from memory
            (:mod:`memwarden.processors.pre_embed`); ``False`` embeds only after the decision.
            Env: ``MEMWARDEN_PRE_EMBED``.
        lexical_idf: whose document frequencies weigh the lexical (BM25) stage of a recall:
            ``"reader"`` (default) computes the IDF over the memories the reader may read (exact counts
            under the read's access keys, kept between recalls until a write makes them stale: 0.2-0.8 ms
            more per recall p50 at 100k memories for a reader that recalls again, about 6 ms for one never seen);
            ``"namespace"`` lets the index apply its IDF over every memory of the namespace, which is free
            but lets a reader's lexical scores reveal how many memories it may *not* read hold a word
            (README "Lexical IDF"). The index is built for one of them: changing it needs a rebuild of the
            index from the ledger (``memwarden replay --in-place``, worker stopped). Env:
            ``MEMWARDEN_LEXICAL_IDF``.
    """

    model_config = SettingsConfigDict(env_prefix="MEMWARDEN_", extra="ignore")

    bootstrap_servers: str = "127.0.0.1:19092"
    topic_prefix: str = "mw"
    partitions: int = Field(default=4, ge=1, le=256)
    replication_factor: int = Field(default=1, ge=1)
    postgres_dsn: str = "postgresql://memwarden@127.0.0.1:15432/memwarden"
    qdrant_url: str | None = None
    qdrant_api_key: str | None = None
    model_name: str = "all-MiniLM-L6-v2"
    model_path: Path | None = None
    embed_batch_size: int = Field(default=64, ge=1)
    embed_backend: Literal["torch", "onnx"] = "onnx"
    query_quantized: bool = True
    lexical_idf: Literal["namespace", "reader"] = "reader"
    data_dir: Path = Field(default_factory=_default_data_dir)
    kafka_port: int = 19092
    kafka_controller_port: int = 19093
    postgres_port: int = 15432
    worker_host: str = "127.0.0.1"
    worker_port: int = 16066
    health_port: int | None = None
    max_text_chars: int = Field(default=20_000, ge=1)
    hearsay_suspicion: bool = False
    kek: str | None = None
    log_level: str = "warning"
    session_timeout_s: float = Field(default=10.0, gt=0)
    stall_s: float = Field(default=300.0, ge=0)
    admin_principal: str = "service:admin"
    admin_public_key: str | None = None
    gate_mode: Literal["full", "skeleton"] = "full"
    instruction_detector: DetectorChoice = "rules+finetuned+multilingual"
    finetuned_not_english_threshold: float = Field(default=1.01, ge=0.0, le=1.01)
    finetuned_not_english_suspicion: float = Field(default=1.01, ge=0.0, le=1.01)
    multilingual_agreement: float = Field(default=0.0, ge=0.0, le=1.0)
    multilingual_suspicion: float | None = Field(default=None, ge=0.0, lt=1.0)
    multilingual_classifier: Literal["e5-lr", "e5-ft"] = "e5-ft"
    read_auth: Literal["required", "optional"] = "required"
    ledger_prefix: str | None = None
    reconcile_interval_s: float = Field(default=3600.0, ge=0)
    keys_compaction_lag_s: float = Field(default=30.0, ge=1)
    retention_interval_s: float = Field(default=5.0, ge=0)
    pre_embed: bool = True

    @field_validator("topic_prefix", "ledger_prefix")
    @classmethod
    def _prefix_is_safe(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,80}", value):
            raise ValueError("topic_prefix: letters, digits, '.', '_' or '-', at most 81 characters")
        return value

    def topic(self, name: str) -> str:
        """Full topic name for a logical topic (``commands``, ``events`` ...) of this namespace's ledger."""
        return f"{self.ledger_prefix or self.topic_prefix}.{name}"

    @property
    def owns_ledger(self) -> bool:
        """Whether the topics are this namespace's own (not a replay of another namespace's ledger)."""
        return self.ledger_prefix in (None, self.topic_prefix)

    def projections_of_ledger(self, prefix: str) -> Settings:
        """These settings for another set of projections (schema, index) named ``prefix`` over the same
        ledger: what a replay builds into."""
        ledger = self.ledger_prefix or self.topic_prefix
        return self.model_copy(update={"topic_prefix": prefix, "ledger_prefix": ledger})

    @property
    def pg_schema(self) -> str:
        """Postgres schema of this namespace (the prefix with every non-identifier char as ``_``)."""
        return "mw_" + re.sub(r"[^a-z0-9_]", "_", self.topic_prefix.lower())

    @property
    def index_name(self) -> str:
        """Qdrant collection (server) or shard directory name (embedded) of this namespace."""
        return re.sub(r"[^A-Za-z0-9_-]", "_", self.topic_prefix) + "_memories"

    @property
    def worker_url(self) -> str:
        return f"http://{self.worker_host}:{self.worker_port}"
