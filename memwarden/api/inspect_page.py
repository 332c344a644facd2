"""The HTML of the inspector page (:mod:`.inspect`): one server-rendered document, no script, one
inline style allowed by its hash in the Content-Security-Policy. Every value is escaped with
:func:`html.escape`; the reports it renders (:mod:`.inspect_data`) hold ids, positions, times,
outcomes and reason codes only, never content."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d232b;background:#f5f6f8}
header{background:#1d2a3a;color:#fff;padding:10px 24px}header h1{font-size:18px;margin:0}
header small{color:#b9c6d6}main{padding:16px 24px}
form{display:flex;gap:8px;flex-wrap:wrap;align-items:end;background:#fff;padding:12px;border:1px solid #d6dbe2}
label{display:flex;flex-direction:column;font-size:12px;color:#4a5563}
input,select{font:inherit;padding:4px 6px;min-width:12em}input[name=target]{min-width:26em}
button{font:inherit;padding:4px 12px;cursor:pointer}
table{border-collapse:collapse;width:100%;background:#fff;margin:6px 0 18px}
th,td{border:1px solid #d6dbe2;padding:3px 6px;text-align:left;vertical-align:top;font-size:12.5px}
th{background:#eceff3}code{font-size:12px}h2{font-size:15px;margin:18px 0 4px}
.refusal{background:#fde8e8;border:1px solid #e3a0a0;padding:8px 12px}
.who{color:#4a5563;font-size:12px}.note{color:#4a5563;font-size:12px}
.ACCEPTED{color:#17692c;font-weight:600}.REJECTED,.QUARANTINED{color:#a11d1d;font-weight:600}
button.link{border:0;background:none;padding:0;color:#1f57a3;text-decoration:underline;font:inherit}
"""
#: The page's Content-Security-Policy: nothing loads, nothing runs, forms post only here.
CSP = ("default-src 'none'; style-src 'sha256-" + base64.b64encode(hashlib.sha256(STYLE.encode()).digest()).decode()
       + "'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
#: What the lookup form can look up.
KINDS = ("memory", "principal")


def esc(value: Any) -> str:
    """``value`` as escaped HTML text (``-`` for ``None`` or empty)."""
    if value is None or value == "" or value == []:
        return "-"
    if isinstance(value, list | tuple):
        return escape(", ".join(str(v) for v in value))
    return escape(str(value))


def when(value: Any) -> str:
    """An ISO time as escaped ``YYYY-MM-DD HH:MM:SS.mmm`` (UTC, as the reports give it), else :func:`esc`."""
    text = str(value) if value else ""
    if len(text) >= 19 and text[10:11] == "T" and text.endswith("+00:00"):
        date, _, clock = text.removesuffix("+00:00").partition("T")
        return escape(f"{date} {clock[:12]}")
    return esc(value)


def follow(kind: str, target: Any) -> str:
    """A button that looks ``target`` up with the form's token (``-`` when there is none)."""
    if not target:
        return "-"
    return (f'<button class="link" form="lookup" name="follow" value="{escape(f"{kind}:{target}")}">'
            f"{escape(str(target))}</button>")


def table(header: Sequence[str], rows: Iterable[Sequence[str]], empty: str) -> str:
    """A table of already escaped cells, or a note saying ``empty``."""
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    if not body:
        return f'<p class="note">{escape(empty)}</p>'
    return "<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + f"</tr>{body}</table>"


def outcome(value: Any) -> str:
    """An outcome, coloured by its class."""
    return f'<span class="{escape(str(value))}">{esc(value)}</span>' if value else "-"


def _form(kind: str, target: str, token: str) -> str:
    options = "".join(f'<option value="{k}"{" selected" if k == kind else ""}>{k}</option>' for k in KINDS)
    return ('<form id="lookup" method="post" action="/inspect" autocomplete="off">'
            '<label>bearer token (admin or reviewer)<input type="password" name="token" required'
            f' autocomplete="off" value="{escape(token)}"></label>'
            f'<label>look up<select name="kind">{options}</select></label>'
            '<label>memory id or principal<input type="text" name="target" required maxlength="200"'
            f' value="{escape(target)}" placeholder="0b1c…-uuid or user:alice"></label>'
            '<button type="submit" id="submit">Look up</button></form>')


def page(namespace: str, *, kind: str = "memory", target: str = "", token: str = "", body: str = "",
         refusal: tuple[int, str, str] | None = None, who: str = "") -> str:
    """The whole document: the lookup form (the token kept in its password field so that another
    lookup needs no retyping), a refusal ``(status, code, message)`` if any, and ``body``."""
    alert = (f'<p class="refusal" role="alert" id="refusal"><b>{refusal[0]} {escape(refusal[1])}</b> — '
             f"{escape(refusal[2])}</p>") if refusal else ""
    signed = f'<p class="who" id="who">{escape(who)}</p>' if who else ""
    return ('<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">'
            '<meta name="viewport" content="width=device-width"><title>memwarden inspector</title>'
            f"<style>{STYLE}</style>"
            f'</head><body><header><h1>memwarden inspector</h1><small>namespace {escape(namespace)} · read only ·'
            ' ids, positions and reason codes, never content</small></header><main>'
            f"{_form(kind, target, token)}{alert}{signed}{body}</main></body></html>")


def _codes(reasons: Sequence[Any]) -> str:
    return esc([r["code"] if isinstance(r, dict) else r for r in reasons])


def _grant_details(g: dict[str, Any]) -> str:
    revoked = f"; revoked by <code>{esc(g['revoked_at'])}</code>" if g["revoked_at"] else ""
    return (f"<code>{esc(g['grant_id'])}</code> to {follow('principal', g['grantee'])}: {esc(g['rights'])} on"
            f" scopes {esc(g['scopes'])}, subjects {esc(g['subjects'] or 'any')}, valid"
            f" {when(g['valid_from'] or 'from its decision')} → {when(g['valid_to'] or 'open')}{revoked}")


def _grant_rows(grants: Sequence[dict[str, Any]]) -> list[list[str]]:
    return [[when(g["decided_at"] or g["issued_at"]), "grant", f"<code>{esc(g['at'])}</code>",
             follow("principal", g["granted_by"]), outcome(g["outcome"]), _grant_details(g)] for g in grants]


def _sorted(rows: list[list[str]]) -> list[list[str]]:
    return sorted(rows, key=lambda r: (r[0] == "-", r[0]))


VERIFIED, NOT_VERIFIED = '<span class="ACCEPTED">verified</span>', '<span class="REJECTED">NOT verified</span>'
TIMELINE = ("when (UTC)", "what", "ledger position", "who", "outcome", "details")


def memory_body(report: dict[str, Any]) -> str:
    """The timeline of one memory (see :func:`memwarden.api.inspect_data.memory_report`)."""
    audit, versions = report["audit"], report["versions"]
    rows = []
    for e in audit["timeline"]:
        c, d = e["command"], e["decision"] or {}
        events = "; ".join(f"{ev['event']} v{ev['version']} at {ev['at']}" if ev.get("version") is not None
                           else f"{ev['event']} at {ev['at']}" for ev in e["events"])
        shredded = str(e["content"]).startswith("shredded at ")
        rows.append([when(d.get("decided_at") or c["issued_at"]), esc(c["kind"]), f"<code>{esc(e['at'])}</code>",
                     follow("principal", c["principal"]), outcome(d.get("outcome") or "undecided"),
                     f"reasons {_codes(d.get('reasons', []))}; command <code>{esc(c['command_id'])}</code>, key"
                     f" <code>{esc(c['signed_with'])}</code>; events: {esc(events)}"
                     + (f"; data key {esc(e['content'])}" if shredded else "")])
    rows += [[when(r["read_at"]), "read", f"<code>{esc(r['at'])}</code>", follow("principal", r["principal"]),
              "returned", f"purpose {esc(r['purpose'])}, rank {esc(r['rank'])}"] for r in audit["reads"]]
    rows += [[when(r["completed_at"]), "forget receipt", f"<code>{esc(r['at'])}</code>", "-",
              VERIFIED if r["verified"] else NOT_VERIFIED,
              f"forget command <code>{esc(r['command_id'])}</code>; versions {esc(r['versions'])}; key tombstones"
              f" {esc(r['key_tombstones'])}; stores "
              + esc([f"{k}: {v}" for k, v in sorted((r["stores"] or {}).items())])] for r in audit["erasure_receipts"]]
    rows += _grant_rows(report["grants"])
    vrows = [[esc(v["version"]), outcome(v["status"]), when(v["valid_from"]), when(v["valid_to"] or "open"),
              f"<code>{esc(v['ledger'])}</code>", f"<code>{esc(v['command_id'])}</code>", when(v["decided_at"]),
              esc(v["superseded_by"] or v["forgotten_by"])] for v in versions]
    status = versions[-1]["status"] if versions else "no projected version"
    return (f'<section id="memory"><h2>memory <code>{esc(audit["memory_id"])}</code> — {esc(status)}</h2>'
            '<p class="note">No text is shown here, ever: a forgotten memory\'s data key is shredded and its'
            " text unreadable on every ledger copy.</p><h2>versions</h2>"
            + table(("version", "status", "valid from", "valid to", "ledger position", "command", "decided at",
                     "closed by"), vrows, "no projected version")
            + '<h2>timeline</h2><div id="timeline">'
            + table(TIMELINE, _sorted(rows), "nothing on the ledger about this memory") + "</div></section>")


def principal_body(report: dict[str, Any]) -> str:
    """The trail of one principal (see :func:`memwarden.api.inspect_data.principal_report`)."""
    audit, record = report["audit"], report["record"]
    rows = [[when(e["issued_at"]), esc(e["kind"]), f"<code>{esc(e['at'])}</code>", follow("principal", e["principal"]),
             outcome(e["outcome"] or "undecided"),
             f"reasons {_codes(e['reasons'])}; memory {follow('memory', e['memory_id'])}; command"
             f" <code>{esc(e['command_id'])}</code>"] for e in audit["wrote"]]
    rows += [[when(r["read_at"]), "read", f"<code>{esc(r['at'])}</code>", esc(audit["principal"]), "returned",
              f"purpose {esc(r['purpose'])}; {len(r['returned'])} memories: "
              + (", ".join(follow("memory", m) for m in r["returned"]) or "none")] for r in audit["read"]]
    rows += _grant_rows(report["grants"])
    granted = [[when(e["issued_at"]), esc(e["kind"]), f"<code>{esc(e['at'])}</code>", outcome(e["outcome"]),
                _codes(e["reasons"])] for e in audit["granted"]]
    return (f'<section id="principal"><h2>principal {esc(audit["principal"])} — {esc(record["kind"].lower())},'
            f' roles {esc(record["roles"] or "none")}</h2><h2>timeline (wrote, read, grants held)</h2>'
            '<div id="timeline">' + table(TIMELINE, _sorted(rows), "nothing on the ledger by this principal")
            + "</div><h2>grants it gave or revoked</h2>"
            + table(("issued at (UTC)", "what", "ledger position", "outcome", "reasons"), granted, "none")
            + f'<p class="note">{len(audit["refused"])} of its commands were rejected.</p></section>')


__all__ = ["CSP", "KINDS", "esc", "follow", "memory_body", "page", "principal_body", "table", "when"]
