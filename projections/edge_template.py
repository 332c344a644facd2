"""A new empty Edge shard as a copy of a template shard (one per layout, dimension and payload-index set).

Creating an Edge shard with its :data:`KEYWORD_FIELDS` and :data:`INTEGER_FIELDS` payload indexes
costs about 150 ms of CPU (every index writes, msyncs and fsyncs its files; measured on Edge 0.9), and
the engine holds the GIL while it does so. Every new namespace pays it: a replay, an evaluation, a
test. An empty shard is a directory of sparse files (about 0.6 MB on disk), so the template is built
once per data directory, closed, and then copied with ``cp -r`` (a few ms, holes preserved; Python's
``shutil.copyfile`` would write the holes out, about 250 MB per shard). The template lives beside
the shards under ``.templates/`` and is built into a temporary directory and renamed, so concurrent
creators never see half a template. Without ``cp`` the caller creates the shard itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import qdrant_edge as qe

from .edge_translate import PAYLOAD_MEMORY, edge_config
from .vector_index import DEFAULT_LEXICAL_IDF, KEYWORD_FIELDS, LAYOUT_VERSION, LEXICAL, LexicalIdf, integer_fields

#: File Edge writes into every shard directory; its presence means "a shard exists here".
CONFIG_FILE = "edge_config.json"
TEMPLATES = ".templates"


def shard_lexical_idf(directory: Path) -> LexicalIdf | None:
    """The lexical IDF the Edge shard at ``directory`` was built for, read from its :data:`CONFIG_FILE`:
    ``"namespace"`` (the engine's IDF modifier on the lexical vector), ``"reader"`` (no modifier), or
    ``None`` (no shard there, an unreadable config, or layout 1 without a lexical vector)."""
    try:
        config = json.loads((Path(directory) / CONFIG_FILE).read_text())
        lexical = config["sparse_vectors"][LEXICAL]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    modifier = str((lexical or {}).get("modifier") or "none").lower()
    return "namespace" if modifier == "idf" else "reader"


def create_indexes(shard: qe.EdgeShard, idf: LexicalIdf = DEFAULT_LEXICAL_IDF) -> None:
    """Create the keyword and integer payload indexes (idempotent: an existing index is kept)."""
    for key in KEYWORD_FIELDS:
        shard.update(qe.UpdateOperation.create_field_index(key, qe.PayloadSchemaType.Keyword))
    for key in integer_fields(idf):
        shard.update(qe.UpdateOperation.create_field_index(key, qe.PayloadSchemaType.Integer))


def template_name(dim: int, idf: LexicalIdf = DEFAULT_LEXICAL_IDF) -> str:
    """``layout<N>-dim<D>-<digest of the payload-index fields and the payload storage>`` (``-reader`` for
    the reader's lexical IDF): a template is reused only for the exact layout it was built with."""
    fields = (",".join(sorted(KEYWORD_FIELDS)) + "|" + ",".join(sorted(integer_fields(idf)))
              + f"|payload={PAYLOAD_MEMORY}")
    suffix = "-reader" if idf == "reader" else ""
    return f"layout{LAYOUT_VERSION}-dim{dim}-{hashlib.sha256(fields.encode()).hexdigest()[:12]}{suffix}"


def _build_template(template: Path, dim: int, idf: LexicalIdf) -> None:
    building = template.with_name(f"{template.name}.building-{uuid.uuid4().hex[:8]}")
    building.parent.mkdir(parents=True, exist_ok=True)
    shard = qe.EdgeShard.create(str(building), edge_config(dim, idf))
    try:
        create_indexes(shard, idf)
        shard.flush()
    finally:
        shard.close()
    try:
        os.rename(building, template)
    except OSError:  # another creator renamed first: theirs is as good
        shutil.rmtree(building, ignore_errors=True)


def copy_empty_shard(directory: Path, dim: int, idf: LexicalIdf = DEFAULT_LEXICAL_IDF) -> bool:
    """Make ``directory`` (which must not hold a shard) an empty shard of ``dim`` floats and lexical IDF
    ``idf`` with every payload index, by copying the template (built first when missing). Returns ``False`` when no GNU
    ``cp`` is available (the caller then creates the shard); raises ``OSError`` when the file system fails."""
    cp = shutil.which("cp")
    if cp is None:
        return False
    template = directory.parent / TEMPLATES / template_name(dim, idf)
    if not (template / CONFIG_FILE).exists():
        _build_template(template, dim, idf)
    staging = directory.with_name(f".{directory.name}.copying-{uuid.uuid4().hex[:8]}")
    try:
        subprocess.run([cp, "-r", "--sparse=always", str(template), str(staging)], check=True, capture_output=True)
    except subprocess.CalledProcessError:  # a cp without --sparse (not GNU coreutils)
        shutil.rmtree(staging, ignore_errors=True)
        return False
    if directory.exists():  # an empty directory left by an earlier attempt
        directory.rmdir()
    os.rename(staging, directory)
    return True


__all__ = ["CONFIG_FILE", "TEMPLATES", "copy_empty_shard", "create_indexes", "shard_lexical_idf", "template_name"]
