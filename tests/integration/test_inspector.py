"""The inspector page (issue 10 part 3) in headless Chromium (Debian's package, driven by Playwright;
no browser is downloaded): the REST app served by uvicorn over a real worker, Kafka and PostgreSQL; a
memory recorded, superseded, read and forgotten through the API; a reviewer looks it up on the page and
sees its versions, decisions with reason codes, the read and the forget receipt, and none of its text;
a screenshot is saved (copied to docs/inspect.png for the README with MEMWARDEN_UPDATE_DOCS=1). A
token of a principal that is neither admin nor reviewer is refused on the page (403, audited); a bad
token is 401."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from memwarden.api.app import create_app
from memwarden.api.gateway import Gateway
from memwarden.ops.pidfiles import free_port
from memwarden.ops.worker_process import WorkerProcess
from memwarden.producers.client import MemwardenClient
from memwarden.settings import Settings
from tests.integration.conftest import poll
from tests.integration.rest_fixtures import auth, fresh, issue, refusals, register

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
#: Debian's Chromium (``apt-get install chromium``, done by ops/install.sh).
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
TEXTS = ("Dana's locker code is 4711", "Dana's locker code is 9090")


@pytest.fixture(scope="module")
def server(namespace: Settings, worker: WorkerProcess) -> Iterator[str]:
    """The REST app (inspector included) on a free loopback port, served by uvicorn in a thread."""
    gateway = Gateway(namespace)
    port = free_port()
    srv = uvicorn.Server(uvicorn.Config(create_app(gateway), host="127.0.0.1", port=port, log_level="warning",
                                        access_log=False))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.1)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(30)
    gateway.close()


@pytest.fixture(scope="module")
def people(namespace: Settings, worker: WorkerProcess, client: MemwardenClient) -> dict[str, tuple[str, str]]:
    """A user (dana) and a reviewer, each registered here with a token: ``name -> (principal, token)``."""
    out = {}
    for name, principal in (("dana", f"user:{fresh('dana')}"), ("reviewer", f"reviewer:{fresh('rita')}")):
        register(client, namespace, principal)
        out[name] = (principal, issue(client, namespace, principal)[1])
    return out


@pytest.fixture(scope="module")
def history(server: str, people: dict[str, tuple[str, str]]) -> dict[str, Any]:
    """A memory of dana's with two versions, a grant covering it, a read and a forget receipt: its id,
    the grant's and the REST audit report."""
    (dana, token), (reviewer, _) = people["dana"], people["reviewer"]
    with httpx.Client(base_url=server, headers=auth(token), timeout=60) as api:
        first = api.post("/v1/memories?wait=true", json={"text": TEXTS[0]})
        assert first.status_code == 201, first.text
        memory_id = first.json()["memory_id"]
        r = api.post("/v1/grants?wait=true", json={"grantee": reviewer, "rights": ["READ"],
                                                   "scopes": ["account:default"], "subjects": [dana]})
        assert r.status_code == 201, r.text
        grant_id = r.json()["grant_id"]
        r = api.post(f"/v1/memories/{memory_id}/supersede?wait=true", json={"text": TEXTS[1]})
        assert r.status_code == 201, r.text
        poll(lambda: memory_id in [m["memory_id"] for m in api.post(
            "/v1/recall", json={"query": "what is Dana's locker code?", "k": 5}).json()["memories"]],
            what="a recall returning the memory")
        r = api.delete(f"/v1/memories/{memory_id}?wait=true&reason=user+request")
        assert r.status_code == 200 and r.json()["outcome"] == "ACCEPTED", r.text
        report = poll(lambda: (lambda j: j if j["erasure_receipts"] and j["reads"] else None)(
            api.get(f"/v1/audit/memories/{memory_id}").json()), what="the forget receipt and the read")
    return {"memory_id": memory_id, "grant_id": grant_id, "report": report}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Debian Chromium through Playwright (``executable_path``: Playwright downloads nothing)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install -e '.[dev]' (ops/install.sh)")
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: ops/install.sh installs Debian's chromium"
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield b
        b.close()


def _submit(page: Any, token: str, kind: str, target: str) -> int:
    """Fill the lookup form and submit it; the status of the answer."""
    page.fill("input[name=token]", token)
    page.select_option("select[name=kind]", kind)
    page.fill("input[name=target]", target)
    with page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith("/inspect")) as answer:
        page.click("#submit")
    page.wait_for_load_state()
    return int(answer.value.status)


def test_a_reviewer_sees_the_timeline_of_a_forgotten_memory_and_none_of_its_text(
        server: str, browser: Any, people: dict[str, tuple[str, str]], history: dict[str, Any],
        tmp_path: Path) -> None:
    dana, _ = people["dana"]
    reviewer, token = people["reviewer"]
    memory_id, report = history["memory_id"], history["report"]
    page = browser.new_page(viewport={"width": 1360, "height": 900})
    loaded = page.goto(f"{server}/inspect")
    assert loaded.status == 200 and page.title() == "memwarden inspector"
    assert "default-src 'none'" in loaded.headers["content-security-policy"]
    assert page.locator("#timeline").count() == 0  # nothing before a token is shown
    assert _submit(page, token, "memory", memory_id) == 200
    assert page.url == f"{server}/inspect"  # the token travelled in the body, never in the URL
    page.wait_for_selector("#timeline")
    text = page.inner_text("main")
    assert f"inspecting as {reviewer}" in text and f"memory {memory_id} — forgotten" in text
    for kind in ("RecordMemory", "SupersedeMemory", "ForgetMemory", "read", "forget receipt", "verified"):
        assert kind in text, kind
    for entry in report["timeline"]:  # every command at its ledger position, decided ACCEPTED with OK
        assert entry["at"] in text and entry["decision"]["outcome"] == "ACCEPTED"
    assert "reasons OK" in text and dana in text
    assert report["reads"][0]["at"] in text and report["erasure_receipts"][0]["at"] in text
    assert f"{history['grant_id']} to {reviewer}: READ" in text
    versions = page.locator("section#memory table").first.inner_text()
    assert versions.count("forgotten") >= 2  # both versions, each with its validity interval
    html = page.content()
    for secret in (*TEXTS, "4711", "9090", "locker"):
        assert secret not in html, secret  # never content, not even of the page's markup
    shot = tmp_path / "inspect.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    if os.environ.get("MEMWARDEN_UPDATE_DOCS") == "1":  # refresh the README's screenshot on request only
        (ROOT / "docs").mkdir(exist_ok=True)
        shutil.copyfile(shot, ROOT / "docs" / "inspect.png")
    # a principal's trail, followed from the timeline with the same token
    with page.expect_response(lambda r: r.request.method == "POST") as answer:
        page.locator(f"button[value='principal:{dana}']").first.click()
    assert answer.value.status == 200
    page.wait_for_selector("section#principal")
    trail = page.inner_text("main")
    assert f"principal {dana} — user" in trail and "RecordMemory" in trail and "ForgetMemory" in trail
    assert "GrantAccess" in trail  # the grants it gave
    assert "4711" not in page.content()
    page.close()


def test_a_token_that_is_neither_admin_nor_reviewer_is_refused_on_the_page(
        server: str, browser: Any, namespace: Settings, people: dict[str, tuple[str, str]],
        history: dict[str, Any]) -> None:
    dana, token = people["dana"]
    page = browser.new_page()
    page.goto(f"{server}/inspect")
    assert _submit(page, token, "memory", history["memory_id"]) == 403
    refusal = page.inner_text("#refusal")
    assert "403 NOT_PERMITTED" in refusal and "neither the admin nor the reviewer role" in refusal
    assert page.locator("#timeline").count() == 0 and page.input_value("input[name=token]") == ""
    assert _submit(page, "mwt_" + "A" * 43, "memory", history["memory_id"]) == 401
    assert "401 UNKNOWN_TOKEN" in page.inner_text("#refusal")
    page.close()
    audited = poll(lambda: [a for a in refusals(namespace) if a["route"] == "/inspect"
                            and a["principal"] == dana], what="audited refusal")
    assert audited[0]["code"] == "NOT_PERMITTED" and token not in str(audited)


def test_the_root_admin_may_inspect_and_bad_lookups_are_400(server: str, namespace: Settings,
                                                            client: MemwardenClient, history: dict[str, Any]) -> None:
    _, token = issue(client, namespace, namespace.admin_principal)
    page = httpx.post(f"{server}/inspect", data={"token": token, "kind": "memory", "target": history["memory_id"]})
    assert page.status_code == 200 and 'id="timeline"' in page.text and page.headers["cache-control"] == "no-store"
    bad = httpx.post(f"{server}/inspect", data={"token": token, "kind": "memory", "target": "<script>x</script>"})
    assert bad.status_code == 400 and "<script>x" not in bad.text and "&lt;script&gt;x" in bad.text
    unknown = httpx.post(f"{server}/inspect", data={"token": token, "kind": "memory",
                                                    "target": "00000000-0000-4000-8000-000000000000"})
    assert unknown.status_code == 404 and "UNKNOWN_MEMORY" in unknown.text
