"""The composition root: builds every client from one ``Settings``. Nothing connects at import;
each client is created on first use and reused."""

from __future__ import annotations

import hashlib
from functools import cached_property
from typing import TYPE_CHECKING, Any

from memwarden.commands.gate import GateLimits
from memwarden.crypto import Kek, load_kek
from memwarden.schemas.codec import AvroCodec, default_codec
from memwarden.settings import Settings

if TYPE_CHECKING:
    import psycopg

    from memwarden.commands.injection import InstructionDetector
    from memwarden.commands.principals import PrincipalRecord
    from memwarden.projections.embedder import Embedder
    from memwarden.projections.injection_classifier import Scorer
    from memwarden.projections.vector_index import VectorIndex
    from memwarden.stores.keyring import KeyRing


class Container:
    """Lazily built clients of one namespace: codec, KEK, key ring, embedder, vector index, Postgres."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._keyring: KeyRing | None = None
        self._embedder: Embedder | None = None
        self._index: VectorIndex | None = None
        self._replaced: VectorIndex | None = None  # index_to_replace, when it is not index()
        self._detector: InstructionDetector | None = None

    @cached_property
    def codec(self) -> AvroCodec:
        return default_codec()

    @cached_property
    def kek(self) -> Kek:
        return load_kek(self.settings.kek, self.settings.data_dir)

    @cached_property
    def trust_anchor(self) -> PrincipalRecord:
        """The root admin registry record the gate trusts (:func:`memwarden.keystore.trust_anchor`)."""
        from memwarden.keystore import trust_anchor

        return trust_anchor(self.settings)

    @cached_property
    def digest_key(self) -> bytes:
        """Secret of the keyed content digests (duplicate detection), derived from the KEK."""
        return hashlib.sha256(b"memwarden-content-digest" + self.kek.key).digest()

    @property
    def limits(self) -> GateLimits:
        return GateLimits(max_text_chars=self.settings.max_text_chars,
                          hearsay_suspicion=self.settings.hearsay_suspicion)

    def keyring(self) -> KeyRing:
        """The started key ring over the namespace's keys topic."""
        if self._keyring is None:
            from memwarden.stores.keyring import KeyRing

            ring = KeyRing(self.settings, self.kek, self.codec)
            ring.start()
            self._keyring = ring
        return self._keyring

    def embedder(self) -> Embedder:
        """The all-MiniLM-L6-v2 embedder on ``settings.embed_backend`` (loaded once; takes a few seconds,
        plus the one-off ONNX export into ``data_dir/onnx``)."""
        if self._embedder is None:
            from memwarden.projections.embedder import SentenceTransformerEmbedder

            s = self.settings
            self._embedder = SentenceTransformerEmbedder(s.model_path, s.embed_batch_size, backend=s.embed_backend,
                                                         cache_dir=s.data_dir / "onnx",
                                                         query_quantized=s.query_quantized)
        return self._embedder

    def instruction_detector(self) -> InstructionDetector:
        """The gate's instruction detector (``settings.instruction_detector``): the rules alone, or the
        rules combined with the trained classifier, which loads the embedder (built once), or with the
        fine-tuned classifier (``rules+finetuned``, its own copy of the model), and with the multilingual
        classifier for texts not in English (``rules+finetuned+multilingual``; ``multilingual_agreement``: the
        two classifiers agreeing decide too; ``multilingual_suspicion``: the head's own suspicion threshold)."""
        if self._detector is None:
            from memwarden.commands.injection import DEFAULT_DETECTOR

            if self.settings.instruction_detector == "rules":
                self._detector = DEFAULT_DETECTOR
            elif self.settings.instruction_detector in ("rules+finetuned", "rules+finetuned+multilingual"):
                from memwarden.projections.injection_classifier import CombinedDetector
                from memwarden.projections.injection_finetuned import FineTunedScorer

                multilingual = self.settings.instruction_detector == "rules+finetuned+multilingual"
                self._detector = CombinedDetector(
                    FineTunedScorer(model_path=self.settings.model_path, cache_dir=self.settings.data_dir / "onnx"),
                    not_english_threshold=self.settings.finetuned_not_english_threshold if multilingual else None,
                    not_english_suspicion=self.settings.finetuned_not_english_suspicion if multilingual else None)
                if multilingual:
                    self._detector = CombinedDetector(self._multilingual_scorer(), rules=self._detector,
                                                      agreement=self.settings.multilingual_agreement or None)
            else:
                from memwarden.projections.injection_classifier import CombinedDetector, InjectionScorer

                self._detector = CombinedDetector(InjectionScorer(self.embedder()))
        return self._detector

    def _multilingual_scorer(self) -> Scorer:
        """The classifier for texts not in English (``settings.multilingual_classifier``) at its suspicion
        threshold (``settings.multilingual_suspicion``: unset, the classifier's own default; 0, its weights')."""
        suspicion = self.settings.multilingual_suspicion
        if self.settings.multilingual_classifier == "e5-ft":
            from memwarden.projections.injection_e5_finetuned import E5FineTunedScorer, load_e5_finetuned

            weights = load_e5_finetuned()
            return E5FineTunedScorer(weights.with_suspicion(suspicion) if suspicion else weights,
                                     cache_dir=self.settings.data_dir / "onnx")
        from memwarden.projections.injection_multilingual import (
            DEFAULT_SUSPICION,
            MultilingualScorer,
            load_multilingual,
        )

        suspicion = DEFAULT_SUSPICION if suspicion is None else suspicion
        return MultilingualScorer(load_multilingual().with_suspicion(suspicion) if suspicion else None)

    def lazy_embedder(self) -> Embedder:
        """An embedder that loads the model only when something must be embedded (a replay that
        finds every vector in the cache never loads it); ``model_id`` is known without loading."""
        from memwarden.projections.embedder import model_id_of

        container = self

        class _Lazy:
            dim = 384
            model_id = model_id_of(self.settings.model_path)

            def embed(self, texts: Any) -> Any:
                return container.embedder().embed(texts)

        return _Lazy()

    @property
    def index_label(self) -> str:
        """Where the vector index lives: ``edge`` or ``server``, for projector bookkeeping."""
        return "server" if self.settings.qdrant_url else "edge"

    def index(self) -> VectorIndex:
        """The vector index: embedded Qdrant Edge under ``data_dir/qdrant`` or a Qdrant server."""
        if self._index is None:
            s = self.settings
            if s.qdrant_url:
                from memwarden.projections.server_index import ServerVectorIndex

                index: VectorIndex = ServerVectorIndex(s.qdrant_url, s.index_name, s.qdrant_api_key,
                                                       idf=s.lexical_idf)
            else:
                from memwarden.projections.edge_index import EdgeVectorIndex

                index = EdgeVectorIndex(s.data_dir / "qdrant", s.index_name, idf=s.lexical_idf)
            index.ensure(384)
            from memwarden.projections.payload_backfill import backfill_access_keys, backfill_fresh_until

            backfill_fresh_until(index)  # points of an older projector: no-op once done
            backfill_access_keys(index)
            self._index = index
        return self._index

    def index_to_replace(self) -> VectorIndex:
        """The vector index an in-place switch replaces (:mod:`memwarden.processors.rebuild`): :meth:`index`;
        or, when the live Edge shard was built for another layout (the other lexical IDF, after
        ``settings.lexical_idf`` changed, or layout 1: the switch is the rebuild that change needs), the shard
        opened as it is, for ``adopt`` only (it is never ensured nor read, and not kept as :meth:`index`;
        :meth:`close` closes it)."""
        s = self.settings
        if self._replaced is not None:  # it holds the shard, adopted or not
            return self._replaced
        if self._index is None and not s.qdrant_url:
            from memwarden.projections.edge_index import EdgeVectorIndex
            from memwarden.projections.edge_template import CONFIG_FILE, shard_lexical_idf

            live = s.data_dir / "qdrant" / s.index_name
            if (live / CONFIG_FILE).exists() and shard_lexical_idf(live) != s.lexical_idf:
                self._replaced = EdgeVectorIndex(live.parent, s.index_name, idf=s.lexical_idf)
                return self._replaced
        return self.index()

    async def pg(self, *, autocommit: bool = False) -> psycopg.AsyncConnection:
        """A new asyncio Postgres connection in the namespace schema (``autocommit``: see
        :func:`memwarden.stores.pg.connect_async`)."""
        from memwarden.stores.pg import connect_async

        return await connect_async(self.settings, autocommit=autocommit)

    def close(self) -> None:
        """Release the key ring and the vector index."""
        if self._keyring is not None:
            self._keyring.close()
        if self._index is not None:
            self._index.close()
        if self._replaced is not None:
            self._replaced.close()


def namespace_digests(settings: Settings) -> dict[str, dict[str, Any]]:
    """One digest per projection of the namespace (:func:`memwarden.projections.state_digest.digests`).
    Opens the namespace's index: an embedded shard must not be held by a running worker."""
    from memwarden.projections.state_digest import digests
    from memwarden.stores.pg import connect

    container = Container(settings)
    try:
        with connect(settings) as conn:
            return digests(conn, container.index(), container.digest_key)
    finally:
        container.close()


def drop_projections(settings: Settings) -> None:
    """Drop the namespace's Postgres schema and its embedded index shard (its topics are untouched:
    :func:`memwarden.ops.topics.delete_topics` drops those of a namespace that owns its ledger)."""
    import shutil

    from memwarden.stores.pg import drop_namespace

    drop_namespace(settings)
    shutil.rmtree(settings.data_dir / "qdrant" / settings.index_name, ignore_errors=True)
