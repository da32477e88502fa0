"""The dashboard in a real headless Chromium (Debian's ``chromium``, driven by Playwright;
no browser download) against a real uvicorn server on 127.0.0.1.

Every request the page makes to anywhere but the server is aborted and counted: the
dashboard and /docs must work offline. With ``ZENBRAIN_SCREENSHOTS=DIR`` the tests also
save the screenshots used in docs/dashboard.md.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
playwright_api = pytest.importorskip("playwright.sync_api")

from live_server import LiveServer

from zenbrain import Scope, open_memory
from zenbrain.clock import SimulatedClock
from zenbrain.config import Config
from zenbrain.mechanisms.ebbinghaus import EbbinghausParams
from zenbrain.server.rest import create_app

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
KEYS = {"key-alice": "alice", "key-bob": "bob"}
T0 = 1_700_000_000.0
SHOTS = os.environ.get("ZENBRAIN_SCREENSHOTS")

if not os.path.exists(CHROMIUM):
    if os.environ.get("CI"):
        raise RuntimeError(f"chromium is missing at {CHROMIUM}: .ci/run installs Debian's chromium package")
    pytest.skip("Debian's chromium is not installed (apt-get install chromium)", allow_module_level=True)


def seed(mem: Any, user: str) -> dict[str, str]:
    """A small store: facts, an episode, relations, a few recalls."""
    sc = Scope(user)
    texts = {
        "tea": f"{user.title()} prefers green tea in the morning",
        "paris": f"{user.title()} flew to Paris in May 2023 for a conference",
        "guitar": f"{user.title()} plays the guitar on weekends",
        "berlin": f"{user.title()}'s office moved to Berlin last year",
        "coffee": f"{user.title()} stopped drinking coffee after the conference",
    }
    ids = {k: mem.store(t, sc).id for k, t in texts.items()}
    mem.relate(ids["coffee"], ids["tea"], "supports", sc)
    mem.relate(ids["paris"], ids["coffee"], "causes", sc)
    mem.record_evidence(ids["tea"], sc, supports=True, strength=3)
    mem.recall("what does she drink?", sc)
    return ids


@pytest.fixture(scope="module")
def clock() -> SimulatedClock:
    return SimulatedClock(T0)


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory, clock: SimulatedClock) -> Iterator[tuple[LiveServer, Any]]:
    # Decay archives every faded memory (the paper's rule), so the lifecycle view has rows.
    config = Config(params={"ebbinghaus_decay": EbbinghausParams(low_information_words=0.0)})
    mem = open_memory(tmp_path_factory.mktemp("ui") / "open.db", embedder="hashing:64", clock=clock, config=config)
    seed(mem, "default")
    server = LiveServer(create_app(mem))
    yield server, mem
    server.stop()
    mem.close()


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    mem = open_memory(tmp_path_factory.mktemp("ui") / "keyed.db", embedder="hashing:64")
    seed(mem, "alice")
    seed(mem, "bob")
    server = LiveServer(create_app(mem, api_keys=KEYS))
    yield server
    server.stop()
    mem.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with playwright_api.sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=CHROMIUM, headless=True, args=FLAGS,
            viewport={"width": 1200, "height": 800})
        yield context
        context.close()


class Page:
    """A page that records console errors, page errors and any request leaving the server."""

    def __init__(self, context: Any, base: str):
        self.base = base
        self.page = context.new_page()
        self.errors: list[str] = []
        self.external: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.route("**/*", self._route)

    def _route(self, route: Any) -> None:
        if route.request.url.startswith(self.base) or route.request.url.startswith("data:"):
            route.continue_()
        else:
            self.external.append(route.request.url)
            route.abort()

    def open(self, path: str = "/ui/") -> Any:
        self.page.goto(self.base + path)
        self.page.wait_for_load_state("networkidle")
        return self.page

    def shot(self, name: str) -> None:
        if SHOTS:
            Path(SHOTS).mkdir(parents=True, exist_ok=True)
            self.page.screenshot(path=str(Path(SHOTS) / f"{name}.png"))

    def clean(self) -> None:
        assert self.errors == [], (self.errors, self.external)
        assert self.external == [], self.external
        self.page.close()


@pytest.fixture
def page(browser: Any, open_server: tuple[LiveServer, Any]) -> Iterator[Page]:
    p = Page(browser, open_server[0].url)
    yield p


def test_every_view_loads_offline_without_console_errors(page: Page):
    pg = page.open("/")  # redirects to /ui/
    assert pg.url.endswith("/ui/")
    pg.wait_for_selector("#memory-rows tr")
    assert "acting as user default" in pg.text_content("#who")
    page.shot("memories")
    for view in ("recall", "graph", "lifecycle", "stats", "memories"):
        pg.click(f"nav button[data-view={view}]")
        pg.wait_for_selector(f"#view-{view}:not([hidden])")
        pg.wait_for_load_state("networkidle")
    page.clean()


def test_search_shows_results_and_paging(page: Page):
    pg = page.open()
    pg.wait_for_selector("#memory-rows tr")
    assert pg.locator("#memory-rows tr").count() == 5
    pg.select_option("#page-size", "10")
    pg.fill("#search", "guitar on weekends")
    pg.click("#memory-filters button[type=submit]")
    pg.wait_for_function("document.querySelector('#page-info').textContent.includes('best matches')")
    first = pg.locator("#memory-rows tr").first.text_content()
    assert "plays the guitar" in first
    page.clean()


def test_recall_shows_the_score_breakdown(page: Page):
    pg = page.open()
    pg.click("nav button[data-view=recall]")
    pg.fill("#query", "green tea in the morning")
    pg.click("#recall-form button[type=submit]")
    pg.wait_for_selector("#hits li.hit")
    top = pg.locator("#hits li.hit").first
    assert "green tea" in top.text_content()
    factors = top.locator("tr.why-row td:first-child").all_text_contents()
    assert {"dense", "lexical", "layer_weight", "retrievability", "final"} <= set(factors)
    page.shot("recall")
    page.clean()


def test_memory_detail_shows_confidence_curve_relations_and_history(page: Page):
    pg = page.open()
    pg.click("nav button[data-view=recall]")
    pg.fill("#query", "green tea")
    pg.click("#recall-form button[type=submit]")
    pg.click("#hits li.hit a >> nth=0")
    pg.wait_for_selector("#detail[open] #curve canvas")
    assert "α=4.00" in pg.text_content("#confidence")  # the evidence of seed(): 3 observations for
    assert "Next review" in pg.text_content("#curve-note")
    assert pg.locator("#relations li a").count() >= 1
    assert "created" in pg.text_content("#history")
    page.shot("memory")
    page.clean()


def test_the_graph_renders_its_nodes(page: Page):
    pg = page.open()
    pg.click("nav button[data-view=graph]")
    pg.wait_for_function("state.cy && state.cy.nodes().length > 0")
    assert pg.evaluate("state.cy.nodes().length") == 5
    assert pg.evaluate("state.cy.edges().filter(e => e.data('label') === 'supports').length") == 1
    assert pg.locator("#graph canvas").count() >= 1
    assert "5 memories" in pg.text_content("#graph-info")
    page.shot("graph")
    page.clean()


def test_decay_archives_and_restore_brings_back(page: Page, open_server: tuple[LiveServer, Any], clock: SimulatedClock):
    _, mem = open_server
    clock.advance(400 * 86400.0)  # long unused: decay will archive
    pg = page.open()
    pg.click("nav button[data-view=lifecycle]")
    pg.click("#run-decay")
    pg.wait_for_selector("#archive-rows button.restore")
    assert "archived" in pg.text_content("#reports")
    n = pg.locator("#archive-rows button.restore").count()
    assert n >= 1
    row = pg.locator("#archive-rows tr").first
    memory_id = row.get_attribute("data-id")
    page.shot("lifecycle")
    row.locator("button.restore").click()
    pg.wait_for_function(f"document.querySelectorAll('#archive-rows button.restore').length === {n - 1}")
    assert not mem.get(memory_id, Scope("default")).archived
    pg.click("nav button[data-view=stats]")
    pg.wait_for_selector("#stats-chart canvas")
    page.shot("stats")
    page.clean()


def test_docs_work_offline(page: Page):
    pg = page.open("/docs")
    pg.wait_for_selector(".swagger-ui .opblock")
    assert pg.locator(".swagger-ui .opblock").count() > 30
    pg = page.open("/redoc")
    pg.wait_for_selector("text='/v1/recall'")
    page.clean()


def test_a_key_sees_only_its_user(browser: Any, keyed_server: LiveServer):
    p = Page(browser, keyed_server.url)
    pg = p.open()
    pg.wait_for_selector("#error:not([hidden])")
    assert "needs an API key" in pg.text_content("#error")
    assert pg.is_visible("#key")
    pg.fill("#key", "key-alice")
    pg.click("#connect button[type=submit]")
    pg.wait_for_selector("#memory-rows tr")
    text = pg.text_content("#memory-rows")
    assert "Alice" in text and "Bob" not in text
    assert pg.input_value("#user") == "alice" and pg.get_attribute("#user", "readonly") is not None
    pg.click("nav button[data-view=graph]")
    pg.wait_for_function("state.cy && state.cy.nodes().length > 0")
    labels = pg.evaluate("state.cy.nodes().map(n => n.data('label')).join(' ')")
    assert "Alice" in labels and "Bob" not in labels
    # Naming another user with this key is refused by the server, whatever the page sends.
    status = pg.evaluate("""async () => (await fetch('/v1/memories?user_id=bob',
                              {headers: {Authorization: 'Bearer key-alice'}})).status""")
    assert status == 403
    p.errors = [e for e in p.errors if "403" not in e]  # the refused request above is logged by Chromium
    p.clean()
