"""Lookups from the client (issue 10): the history of one memory (every version the principal may
read, with validity intervals, statuses and ledger positions, from the read API's ``POST /history``,
signed like a recall and audited), a write held for review as a reviewer reads it (``POST /held``)
and the gate's decision of one command, if taken (``POST /decisions``, without waiting). A mixin of
:class:`~memwarden.producers.client.MemwardenClient`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx

from memwarden.commands.read_auth import sign_request
from memwarden.commands.readmodel.query import DEFAULT_PURPOSE
from memwarden.commands.signing import Signer
from memwarden.epoch import now_ms
from memwarden.errors import MemwardenError, ValidationError
from memwarden.producers.building import refused_read

#: The read-API routes a caller may send signed by its own key through :meth:`LookupCalls.forward_signed`.
SIGNED_PATHS = ("/recall", "/history")


class LookupCalls:
    """The lookups of the client (it posts through the client's ``_post`` and signs with the signer it
    holds for the principal)."""

    _signers: dict[str, Signer]

    def _post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        raise NotImplementedError

    def _lookup(self, command_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        raise NotImplementedError

    def decisions_now(self, command_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The decisions the gate has taken so far of ``command_ids`` (at most 1000 per call), as
        :meth:`MemwardenClient.decided` gives them, without waiting; undecided ids are absent. Raises
        ``StackUnavailable`` when the worker does not answer (a 503 reads as "none yet")."""
        return self._lookup(command_ids)

    def decision(self, command_id: str) -> dict[str, Any] | None:
        """The gate's decision of ``command_id`` as :meth:`MemwardenClient.decided` gives it, or ``None``
        when it has not decided it (yet, or no such command reached the ledger). Does not wait.
        Raises ``StackUnavailable`` when the worker does not answer."""
        return self._lookup([command_id]).get(command_id)

    def history(self, principal: str, memory_id: str, purpose: str = DEFAULT_PURPOSE,
                include_untrusted: bool = False) -> dict[str, Any] | None:
        """``{"memory_id", "current", "versions": [...]}`` of ``memory_id`` as ``principal`` may read it
        for ``purpose`` (each version: ``version``, ``status``, ``valid_from``/``valid_to`` (ISO 8601),
        writer, provenance, ``position`` on the ledger, ``text`` or ``withheld``), or ``None`` when it
        may read no version of it. Raises ``ValidationError`` for a bad argument or a refused
        signature (field ``auth``), ``StackUnavailable`` when the worker does not answer."""
        status, data = self._signed_read("/history", principal, {
            "principal": principal, "memory_id": memory_id, "purpose": purpose, "include_untrusted": include_untrusted})
        if status == 404:
            return None
        if status != 200:
            raise MemwardenError(f"history failed with HTTP {status}: {data}")
        found: dict[str, Any] = data
        return found

    def held(self, principal: str, command_id: str) -> dict[str, Any]:
        """A write held for review as reviewer ``principal`` reads it (``POST /held``, signed, audited with purpose
        ``review``): ``command_id``, ``memory_id``, ``kind``, ``writer``, ``subject``, ``scope``, ``source_kind``,
        ``source_ref``, ``reasons``, ``quarantined_at``, ``position``, ``text`` (``None`` with ``withheld`` when
        its key is gone). Raises ``ValidationError`` naming ``principal`` when it is no reviewer or wrote it
        (``NOT_A_REVIEWER``, ``SELF_REVIEW``), naming ``command_id`` when nothing is held under it or it was
        reviewed already (``NOT_QUARANTINED``, ``ALREADY_REVIEWED``) or a bad argument, naming ``auth`` for a
        refused signature; ``StackUnavailable`` when the worker does not answer."""
        status, data = self._signed_read("/held", principal, {"principal": principal, "command_id": command_id})
        if status in (403, 404, 409):
            raise ValidationError(str(data.get("field") or "command_id"), f"{data.get('code')}: {data.get('error')}")
        if status != 200:
            raise MemwardenError(f"held lookup failed with HTTP {status}: {data}")
        found: dict[str, Any] = data
        return found

    def _signed_read(self, path: str, principal: str, body: dict[str, Any]) -> tuple[int, Any]:
        """POST ``body`` to the read API's ``path``, signed by ``principal``'s signer when the client holds one;
        ``(status, JSON answer)``. Raises the ``ValidationError`` of a 400 or 401 (:func:`refused_read`)."""
        signer = self._signers.get(principal)
        if signer is not None:
            body = sign_request(body, signer, now_ms())
        response = self._post(path, body)
        data = response.json()
        if response.status_code in (400, 401):
            raise refused_read(data, principal, signer is not None)
        return response.status_code, data

    def forward_signed(self, path: str, body: Any) -> tuple[int, Any]:
        """Hand a request its caller signed with its own key (``POST /recall`` or ``/history`` of the
        read API) to the worker as it is, and return the worker's ``(status, JSON answer)``: the
        worker verifies the signature, the clock skew and replays. Raises ``ValidationError`` for
        another ``path``, ``StackUnavailable`` when the worker does not answer."""
        if path not in SIGNED_PATHS:
            raise ValidationError("path", f"one of {', '.join(SIGNED_PATHS)}")
        response = self._post(path, body)
        try:
            return response.status_code, response.json()
        except ValueError:
            return 502, {"error": f"the worker answered HTTP {response.status_code} without JSON"}


__all__ = ["SIGNED_PATHS", "LookupCalls"]
