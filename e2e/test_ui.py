"""The /ui page in a real browser: Debian's headless Chromium, driven by
ui-test/tree.js (playwright-core), shows a thread made by a real graph run;
ui-test/memory.js checks the Memory view against items HTTPStore put.

`make test-e2e` installs Chromium and the npm packages first (`make ui-deps`).
The thread forks by time travel after a failed step, so its tree has an
abandoned branch ending in an error, subgraph namespaces and an interrupted head.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from typing_extensions import TypedDict

from saver_client import HTTPSaver, HTTPStore

from support.graphs import chat_config, chat_graph
from support.processes import ServiceProcess

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "ui-test" / "tree.js"
SCREENSHOT = ROOT / ".cache" / "ui" / "tree.png"
MEMORY_SCRIPT = ROOT / "ui-test" / "memory.js"
MEMORY_SCREENSHOT = ROOT / ".cache" / "ui" / "memory.png"
VALUE_CHARS = 4000  # of a value's formatted JSON the Memory view shows (api/ui/app.js)
CHROMIUM = Path("/usr/bin/chromium")
# One browser run: launch, load, draw, click, screenshot. Generous for small CI machines.
SCRIPT_TIMEOUT = 120.0


class Doc(TypedDict, total=False):
    topic: str
    notes: list[str]
    draft: str
    verdict: str


class Research(TypedDict, total=False):
    topic: str
    notes: list[str]


def report_graph(saver: HTTPSaver, fail: dict[str, bool]) -> Any:
    """plan -> research (a subgraph: search -> summarize) -> write -> review.

    `write` raises while fail["write"] is set; `review` waits for a human.
    """

    def search(state: Research) -> Research:
        return {"notes": [f"found {state['topic']}"]}

    def summarize(state: Research) -> Research:
        return {"notes": [*state["notes"], "summary"]}

    sub = StateGraph(Research)
    sub.add_node("search", search)
    sub.add_node("summarize", summarize)
    sub.add_edge(START, "search")
    sub.add_edge("search", "summarize")
    sub.add_edge("summarize", END)

    def plan(state: Doc) -> Doc:
        return {"topic": state["topic"].strip()}

    def write(state: Doc) -> Doc:
        if fail.get("write"):
            raise RuntimeError("write: the model timed out")
        return {"draft": f"{state['topic']}: {len(state['notes'])} notes"}

    def review(state: Doc) -> Doc:
        return {"verdict": str(interrupt(f"approve {state['draft']!r}?"))}

    g = StateGraph(Doc)
    g.add_node("plan", plan)
    g.add_node("research", sub.compile())
    g.add_node("write", write)
    g.add_node("review", review)
    g.add_edge(START, "plan")
    g.add_edge("plan", "research")
    g.add_edge("research", "write")
    g.add_edge("write", "review")
    g.add_edge("review", END)
    return g.compile(checkpointer=saver)


def make_thread(saver: HTTPSaver) -> str:
    """Run the report graph until `write` fails, travel back to after `plan`,
    edit the topic and run again up to the review interrupt."""
    fail = {"write": True}
    graph = report_graph(saver, fail)
    thread_id = f"ui-{uuid.uuid4()}"
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    with pytest.raises(RuntimeError, match="timed out"):
        graph.invoke({"topic": " tides "}, config, durability="sync")
    after_plan = next(s for s in graph.get_state_history(config) if s.next == ("research",))
    fail["write"] = False
    forked = graph.update_state(after_plan.config, {"topic": "tides and moons"})
    graph.invoke(None, forked, durability="sync")
    assert graph.get_state(config).next == ("review",)
    return thread_id


def run_script(
    url: str, thread_id: str, nodes: int, *extra: str
) -> subprocess.CompletedProcess[str]:
    return run_node(SCRIPT, "--url", url, "--thread", thread_id, "--nodes", str(nodes), *extra)


def run_memory_script(
    url: str, namespace: tuple[str, ...], items: int, *extra: str
) -> subprocess.CompletedProcess[str]:
    return run_node(
        MEMORY_SCRIPT, "--url", url, "--namespace", json.dumps(list(namespace)), "--items", str(items), *extra
    )


def run_node(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    node = shutil.which("node")
    if node is None or not CHROMIUM.exists() or not (ROOT / "ui-test" / "node_modules").exists():
        pytest.fail(
            "the browser test needs node, /usr/bin/chromium and ui-test's npm packages: "
            "run `make ui-deps` (ui-test/setup.sh)"
        )
    return subprocess.run(
        [node, str(script), *args],
        capture_output=True,
        text=True,
        timeout=SCRIPT_TIMEOUT,
        stdin=subprocess.DEVNULL,
        cwd=ROOT,
    )


def test_page_draws_a_forked_thread(saver: HTTPSaver, saver_url: str) -> None:
    thread_id = make_thread(saver)
    tree = saver.tree(thread_id)
    abandoned = saver.abandoned(thread_id)
    # What the page is expected to show: the thread is what the docstring says.
    assert [b.status for b in abandoned] == ["error"]
    assert tree.head is not None and tree.head.status == "interrupted"
    assert {n.checkpoint_ns.split(":")[0] for n in tree.nodes} == {"", "research"}

    SCREENSHOT.unlink(missing_ok=True)
    done = run_script(saver_url, thread_id, len(tree.nodes), "--screenshot", str(SCREENSHOT))
    assert done.returncode == 0, f"tree.js failed:\n{done.stderr}\n{done.stdout}"
    shown = json.loads(done.stdout.strip().splitlines()[-1])
    assert shown["nodes"] == len(tree.nodes)
    assert shown["live"] == len(tree.live_path)
    assert set(shown["abandoned"]) >= {i for b in abandoned for i in b.checkpoint_ids}
    assert not set(shown["abandoned"]) & {n.checkpoint_id for n in tree.live_path}
    assert shown["error"] == [i for b in abandoned for i in b.checkpoint_ids[-1:]]
    assert shown["interrupted"] == [tree.head.checkpoint_id]
    assert shown["selected"] == tree.head.checkpoint_id
    assert SCREENSHOT.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_page_with_the_wrong_count_fails(saver: HTTPSaver, saver_url: str) -> None:
    """The script is a real check: told one node too many, it fails."""
    thread_id = make_thread(saver)
    count = len(saver.tree(thread_id).nodes)
    done = run_script(saver_url, thread_id, count + 1, "--no-screenshot")
    assert done.returncode != 0, done.stdout
    assert f"expected {count + 1} nodes, the page shows {count}" in done.stderr


def test_page_needs_no_key_but_its_data_does(
    spawn_service: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "ui-test-" + uuid.uuid4().hex
    monkeypatch.setenv("SAVER_API_KEYS", f"ui:{key}")
    service: ServiceProcess = spawn_service()
    with httpx.Client(base_url=service.url, timeout=10.0) as http:
        page = http.get("/ui", params={"thread": "t"})
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        csp = page.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "connect-src 'self'" in csp
        assert page.headers["x-content-type-options"] == "nosniff"
        files = [page]
        for name, ctype in (("app.js", "text/javascript"), ("style.css", "text/css")):
            asset = http.get(f"/ui/{name}")
            assert asset.status_code == 200 and asset.headers["content-type"].startswith(ctype)
            files.append(asset)
        for f in files:
            # No URL of another site (the SVG namespace is a name, never fetched).
            text = f.text.replace("http://www.w3.org/2000/svg", "")
            assert "http://" not in text and "https://" not in text, f.url
        for missing in ("/ui/index.html", "/ui/nope.js", "/ui/..%2Fopenapi.yaml"):
            assert http.get(missing).status_code == 404, missing
        assert http.get("/v1/threads/t/tree").status_code == 401
        assert (
            http.get("/v1/threads/t/tree", headers={"Authorization": f"Bearer {key}"}).status_code
            == 404
        )

    # The key typed into the page reaches the API: the page draws a keyed thread.
    with HTTPSaver(service.url, api_key=key) as keyed:
        thread_id = make_thread(keyed)
        count = len(keyed.tree(thread_id).nodes)
    done = run_script(service.url, thread_id, count, "--key", key, "--no-screenshot")
    assert done.returncode == 0, f"tree.js failed:\n{done.stderr}\n{done.stdout}"
    assert json.loads(done.stdout.strip().splitlines()[-1])["nodes"] == count

    # And to the Store: the Memory view lists the tenant's items with it.
    ns = ("ui", "keyed")
    with HTTPStore(service.url, api_key=key) as store:
        store.put(ns, "k", {"text": "only with the key"})
    done = run_memory_script(service.url, ns, 1, "--key", key, "--no-screenshot")
    assert done.returncode == 0, f"memory.js failed:\n{done.stderr}\n{done.stdout}"
    assert json.loads(done.stdout.strip().splitlines()[-1])["items"][0]["value"] == {"text": "only with the key"}


def test_page_lists_a_checkpoints_delta_channels(saver: HTTPSaver, saver_url: str) -> None:
    """A DeltaChannel holds no value at most checkpoints: the panel says how it is rebuilt."""
    graph, config = chat_graph(saver), chat_config()
    for i in range(7):
        graph.invoke({"messages": [f"hi {i}"]}, config)
    thread_id = config["configurable"]["thread_id"]
    head = saver.get_tuple(config)
    assert head is not None and "messages" not in head.checkpoint["channel_values"]
    history = saver.get_delta_channel_history(config=head.config, channels=["messages"])["messages"]
    done = run_script(saver_url, thread_id, len(saver.tree(thread_id).nodes), "--no-screenshot")
    assert done.returncode == 0, f"tree.js failed:\n{done.stderr}\n{done.stdout}"
    shown = json.loads(done.stdout.strip().splitlines()[-1])
    assert [row[:2] for row in shown["head_deltas"]] == [["messages", str(len(history["writes"]))]]
    assert shown["head_deltas"][0][3].startswith("a snapshot of")


def test_page_shows_values_and_a_conversation(saver: HTTPSaver, saver_url: str) -> None:
    """The panel shows the head's values as the service decodes them, its
    messages as a conversation; a message holding markup shows as text, and
    adds no element to the page."""
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import MessagesState

    class Chat(MessagesState):
        turns: int

    hostile = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'

    def reply(state: Chat) -> dict[str, Any]:
        return {"messages": [AIMessage("I read it as text.", id="a1")], "turns": state.get("turns", 0) + 1}

    g = StateGraph(Chat)
    g.add_node("reply", reply)
    g.add_edge(START, "reply")
    g.add_edge("reply", END)
    graph = g.compile(checkpointer=saver)
    thread_id = f"ui-values-{uuid.uuid4()}"
    graph.invoke({"messages": [HumanMessage(hostile, id="h1")]}, {"configurable": {"thread_id": thread_id}})

    done = run_script(saver_url, thread_id, len(saver.tree(thread_id).nodes), "--no-screenshot")
    assert done.returncode == 0, f"tree.js failed:\n{done.stderr}\n{done.stdout}"
    shown = json.loads(done.stdout.strip().splitlines()[-1])
    assert shown["head_values"]["turns"] == "1"
    assert shown["head_messages"] == [["human", hostile], ["ai", "I read it as text."]]
    assert shown["injected"] == 0


def test_memory_view_lists_a_namespaces_items(saver_url: str) -> None:
    """Items put through HTTPStore appear in the Memory view: the namespace in
    the list, then its items (and those of the namespace under it) with their
    keys, update times and values; a large value is cut, and says so."""
    ns = ("ui", uuid.uuid4().hex[:12], "memories")
    with HTTPStore(saver_url) as store:
        store.put(ns, "food", {"text": "likes pizza", "tags": ["food", "italian"], "n": 1.5})
        store.put(ns, "", {"empty key": True, "note": "a key may be empty"})
        store.put((*ns, "archive"), "old", {"text": "older", "nested": {"a": [1, {"b": None}]}})
        store.put(ns, "big", {"blob": "x" * (2 * VALUE_CHARS)})
        expected = store.search(ns, limit=100)
    assert len(expected) == 4

    MEMORY_SCREENSHOT.unlink(missing_ok=True)
    done = run_memory_script(saver_url, ns, len(expected), "--screenshot", str(MEMORY_SCREENSHOT))
    assert done.returncode == 0, f"memory.js failed:\n{done.stderr}\n{done.stdout}"
    shown = json.loads(done.stdout.strip().splitlines()[-1])
    assert list(ns) in shown["namespaces"] and [*ns, "archive"] in shown["namespaces"]
    # In the search's order: newest update first.
    assert [(tuple(i["namespace"]), i["key"]) for i in shown["items"]] == [(e.namespace, e.key) for e in expected]
    for got, want in zip(shown["items"], expected, strict=True):
        assert datetime.fromisoformat(got["updated_at"]) == want.updated_at
        if want.key == "big":
            assert got["value"] is None and got["shown_chars"] == VALUE_CHARS
        else:
            assert got["value"] == want.value
    assert MEMORY_SCREENSHOT.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # The script is a real check: told one item too many, it fails.
    done = run_memory_script(saver_url, ns, len(expected) + 1, "--no-screenshot")
    assert done.returncode != 0, done.stdout
    assert f"expected {len(expected) + 1} items, the page shows {len(expected)}" in done.stderr
