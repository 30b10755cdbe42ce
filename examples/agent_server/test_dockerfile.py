"""The image `langgraph dockerfile` generates for this example installs the client.

Without Docker: the test asks the pinned langgraph-cli (requirements-cli.txt;
`LANGGRAPH_CLI` names its executable) for the Dockerfile, then replays what
the Dockerfile does to the dependencies (the COPY and ADD of each one into
/deps, the pyproject written for a folder without one, and the
`uv pip install -e .` of every /deps entry, here with pip) into a fresh
folder and a clean venv, and finally enters the checkpointer and the store
the image's LANGGRAPH_CHECKPOINTER and LANGGRAPH_STORE name against a live
saver service (the embedded store, which serves the Store).

The image's base (langchain/langgraph-api) brings langgraph itself and its
own constraints file; the replay installs the dependencies' requirements
under python/constraints.txt instead.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
# pip installs of a fresh venv; generous for small CI machines.
INSTALL_TIMEOUT = 600


def _cli() -> str:
    cli = os.environ.get("LANGGRAPH_CLI")
    if not cli or not os.access(cli, os.X_OK):
        raise pytest.UsageError("set LANGGRAPH_CLI to langgraph-cli's executable (make test-agent-server does)")
    return cli


def _service(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    binary = os.environ.get("SAVER_BIN") or str(REPO / "bin" / "saver")
    addr = workdir / "addr"
    proc = subprocess.Popen(
        [binary, "serve", "-addr", "127.0.0.1:0", "-addr-file", str(addr), "-db", str(workdir / "saver.db")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert proc.poll() is None, "saver exited at start"
        text = addr.read_text().strip() if addr.exists() else ""
        if re.search(r":\d+$", text):
            return proc, f"http://{text}"
        time.sleep(0.02)
    proc.kill()
    raise AssertionError("saver did not write its address")


def test_the_generated_image_installs_the_client_and_its_checkpointer_and_store_load(tmp_path: Path) -> None:
    dockerfile = tmp_path / "Dockerfile"
    gen = subprocess.run(
        [_cli(), "dockerfile", "-c", str(HERE / "langgraph.json"), str(dockerfile)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    text = dockerfile.read_text()
    contexts = dict(re.findall(r"--build-context (\w+)=(\S+?)`?$", gen.stdout, re.M))
    root = tmp_path / "image"
    deps = root / "deps"

    def local(container_path: str) -> Path:
        assert container_path.startswith("/deps/"), container_path
        return deps / container_path.removeprefix("/deps/")

    # The dependencies, where the image puts them.
    copies = re.findall(r"^COPY --from=(\w+) \. (/deps/\S+)$", text, re.M)
    adds = re.findall(r"^ADD \. (/deps/\S+)$", text, re.M)
    for name, dest in copies:
        shutil.copytree(contexts[name], local(dest), ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    for dest in adds:
        shutil.copytree(HERE, local(dest), ignore=shutil.ignore_patterns("__pycache__", ".langgraph_api"))
    # A folder without pyproject.toml gets one written line by line.
    for block in re.findall(r"for line in (.*?); do \\\n\s*echo \"\$line\" >> (\S+);", text, re.S):
        lines, target = block
        local(target).write_text("".join(v + "\n" for v in re.findall(r"'([^']*)'", lines)))
    assert copies, f"the image does not copy the client in:\n{text}"
    assert any(dest.endswith("/python") for _, dest in copies)

    # Every /deps entry installed editable, as the image's loop does.
    loop = re.search(r'for dep in /deps/\*;.*uv pip install --system --no-cache-dir -c /api/constraints.txt -e \.', text)
    assert loop, f"the install step changed:\n{text}"
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    for dep in sorted(p for p in deps.iterdir() if p.is_dir()):
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "-c", str(REPO / "python" / "constraints.txt"), "-e", str(dep)],
            check=True,
            timeout=INSTALL_TIMEOUT,
        )

    # The checkpointer and the store the image names, entered from the
    # image's WORKDIR with the image's environment, as Agent Server does.
    image_env = dict(re.findall(r"^ENV (LANGGRAPH_\w+)='(.*)'$", text, re.M))
    conf = json.loads(image_env["LANGGRAPH_CHECKPOINTER"])
    store_conf = json.loads(image_env["LANGGRAPH_STORE"])
    module_path, attr = conf["path"].rsplit(":", 1)
    store_path, store_attr = store_conf["path"].rsplit(":", 1)
    workdir = re.findall(r"^WORKDIR (\S+)$", text, re.M)[-1]
    # langgraph-cli rewrites the checkpointer's path into /deps but leaves
    # the store's as written: Agent Server opens it from the WORKDIR, which
    # is this folder's copy.
    store_file = local(store_path) if store_path.startswith("/") else local(workdir) / store_path
    assert store_file.is_file(), store_file
    proc, url = _service(tmp_path)
    try:
        script = (
            "import asyncio, importlib.util, sys\n"
            "def load(name, path):\n"
            "    spec = importlib.util.spec_from_file_location(name, path)\n"
            "    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)\n"
            "    return mod\n"
            "mod, store_mod = load('checkpointer', sys.argv[1]), load('store', sys.argv[2])\n"
            "async def main():\n"
            f"    async with getattr(mod, {attr!r})() as saver:\n"
            "        from langgraph.checkpoint.base import BaseCheckpointSaver\n"
            "        assert isinstance(saver, BaseCheckpointSaver)\n"
            "        print(type(saver).__module__, saver._transport.retry.max_delay)\n"
            f"    async with getattr(store_mod, {store_attr!r})() as store:\n"
            "        from langgraph.store.base import BaseStore\n"
            "        assert isinstance(store, BaseStore)\n"
            "        await store.aput(('users', 'u1'), 'm1', {'text': 'likes tea'})\n"
            "        item = await store.aget(('users', 'u1'), 'm1')\n"
            "        print(type(store).__module__, item.value['text'].replace(' ', '_'))\n"
            "asyncio.run(main())\n"
        )
        out = subprocess.run(
            [str(python), "-c", script, str(local(module_path)), str(store_file)],
            cwd=local(workdir),
            env={**os.environ, "SAVER_URL": url, "PYTHONPATH": ""},
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        proc.kill()
        proc.wait(timeout=10)
    assert out.returncode == 0, out.stderr
    module, budget, store_module, remembered = out.stdout.split()
    # Imported from the installed copy, not from this checkout.
    assert module == "saver_client.saver"
    assert float(budget) == 60
    assert (store_module, remembered) == ("saver_client.store", "likes_tea")
    site = subprocess.run(
        [str(python), "-c", "import saver_client, sys; print(saver_client.__file__)"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    assert Path(site).is_relative_to(deps), site
