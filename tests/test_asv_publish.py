"""asv results of several machines in one published site, viewable offline.

Real `asv run` (existing environment, one Dense case) under two machine names into a temporary
results dir, real `asv publish`, scripts/asv_html.py on the site, and headless Chromium with
every host but 127.0.0.1 unresolvable: asv's own page falls back to its error page, the
localised one draws the graph of both machines.
"""
import base64
import contextlib
import hashlib
import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT

from kmicro import asvconf

# One xdist worker runs these tests (`--dist loadgroup`): shared module fixtures or paths.
pytestmark = pytest.mark.xdist_group("asv_publish")

ASV = [sys.executable, "-m", "asv"]
SCRIPT = ROOT / "scripts" / "asv_html.py"
CHROMIUM = Path("/usr/bin/chromium")
MACHINES = ("cpu-box", "gpu-box")
DENSE = r"Ops.time_pass\(.dense\(units=10\)@32x512., .forward.\)"  # asv quotes str params
GRAPH = ("index.html#ops.Ops.time_pass?p-case=%27dense(units%3D10)%4032x512%27"
         "&p-pass=%27forward%27")
ASV_WWW_INDEX = Path(importlib.util.find_spec("asv").origin).parent / "www" / "index.html"


def _load_script():
    spec = importlib.util.spec_from_file_location("asv_html", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


asv_html = _load_script()


def run(*args, env=None, timeout=300):
    p = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, env=env, timeout=timeout)
    assert p.returncode == 0, f"{args}:\n{p.stdout}{p.stderr}"
    return p


def localise(html):
    """scripts/asv_html.py as a user runs it; skips when the npm tarballs are out of reach."""
    p = subprocess.run([sys.executable, SCRIPT, html], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    if p.returncode == 1 and "cannot fetch" in p.stderr:
        pytest.skip(f"npm registry unreachable and .cache/asv-assets empty: {p.stderr.strip()}")
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """(config, env, html dir, untouched copy of it) after two machines ran and asv published.

    asv chdirs to the config's folder, so every path in the temporary config is absolute;
    HOME is temporary too, so the machines are registered in a throwaway ~/.asv-machine.json.
    """
    tmp = tmp_path_factory.mktemp("asv")
    branch = run("git", "rev-parse", "--abbrev-ref", "HEAD").stdout.strip()  # HEAD if detached
    conf = dict(asvconf.config(), repo=str(ROOT), branches=[branch],
                benchmark_dir=str(ROOT / "benchmarks"), env_dir=str(tmp / "env"),
                results_dir=str(tmp / "results"), html_dir=str(tmp / "html"))
    path = tmp / "asv.conf.json"
    path.write_text(asvconf.render(conf))
    (tmp / "home").mkdir()
    env = dict(os.environ, HOME=str(tmp / "home"), KERAS_BACKEND="numpy")
    commit = run("git", "rev-parse", "HEAD").stdout.strip()
    for machine in MACHINES:
        run(*ASV, "--config", path, "machine", "--yes", "--machine", machine,
            "--cpu", f"{machine} cpu", env=env)
        run(*ASV, "--config", path, "run", "-E", f"existing:{sys.executable}", "--quick",
            "--launch-method", "forkserver", "--machine", machine, "--set-commit-hash", commit,
            "-b", DENSE, env=env)
    run(*ASV, "--config", path, "publish", env=env)
    shutil.copytree(tmp / "html", tmp / "html-cdn")
    return path, env, tmp / "html", tmp / "html-cdn"


@pytest.mark.slow
def test_published_site_holds_every_machine(published):
    _, _, html, _ = published
    index = json.loads((html / "index.json").read_text())
    assert sorted(index["machines"]) == sorted(MACHINES)
    assert index["machines"]["gpu-box"]["cpu"] == "gpu-box cpu"
    for machine in MACHINES:
        # Machine fields that differ (here cpu) become graph parameters too: cpu-.../machine-...
        (graph,) = html.glob(f"graphs/branch-*/**/machine-{machine}/*/ops.Ops.time_pass.json")
        assert any(v is not None for _, v in json.loads(graph.read_text())), graph


@pytest.mark.slow
def test_asv_html_puts_every_cdn_asset_in_vendor_and_is_idempotent(published):
    _, _, html, _ = published
    localise(html)
    before = {p: p.read_bytes() for p in html.rglob("*") if p.is_file()}
    assert "10 assets in vendor/, 0 of 2 pages rewritten" in localise(html)
    assert {p: p.read_bytes() for p in html.rglob("*") if p.is_file()} == before
    page = (html / "index.html").read_text()
    tags = re.findall(r"<(?:script|link)\b[^>]*>", page)
    assert not [t for t in tags if "://" in t or "integrity=" in t or "crossorigin" in t]
    assert all((html / asv_html.local_path(url)).is_file() for url in asv_html.ASSETS)


@pytest.mark.slow
def test_vendored_files_that_asv_pins_are_the_pinned_bytes(published):
    """Where npm has the very file the CDN tag names, its bytes match asv's own SRI hash."""
    _, _, html, _ = published
    localise(html)
    pinned = dict(re.findall(r'(?:src|href)="(https://[^"]+)" integrity="([^"]+)"',
                             ASV_WWW_INDEX.read_text()))
    same = []
    for url, sri in pinned.items():
        algo, digest = sri.split("-", 1)
        data = (html / asv_html.local_path(url)).read_bytes()
        if base64.b64encode(hashlib.new(algo, data).digest()).decode() == digest:
            same.append(Path(asv_html.local_path(url)).name)
    # Not flot (npm has no .min.js) nor stupidtable (1.1.3 stands in for 1.0.1).
    assert sorted(same) == ["bootstrap.min.css", "bootstrap.min.js", "jquery.flot.orderBars.js",
                            "jquery.min.js", "md5.min.js"]


@contextlib.contextmanager
def preview(conf, env, html):
    """`asv preview` of html on a free port; yields its base URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([*ASV, "--config", conf, "preview", "--port", str(port),
                               "--html-dir", html], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 60  # asv's start-up, on a machine busy with other tests
        while True:
            with contextlib.suppress(OSError):
                urllib.request.urlopen(url + "index.html", timeout=2).close()
                break
            if time.monotonic() > deadline or server.poll() is not None:
                pytest.fail(f"asv preview did not answer on {url}")
            time.sleep(0.1)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=10)


def chromium(url):
    """(DOM after the page's scripts ran, console messages), offline but for 127.0.0.1."""
    with tempfile.TemporaryDirectory() as profile:
        p = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
             "--enable-logging=stderr", "--v=0", f"--user-data-dir={profile}",
             "--virtual-time-budget=10000", "--dump-dom", url],
            capture_output=True, text=True, timeout=120)
    return p.stdout, "\n".join(re.findall(r"CONSOLE.*", p.stderr))


@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.exists(), reason="no /usr/bin/chromium (apt-get install chromium)")
def test_offline_browser_draws_both_machines_only_with_local_assets(published):
    conf, env, html, cdn = published
    with preview(conf, env, cdn) as url:
        dom, _ = chromium(url + GRAPH)
    assert "Can not determine continental origin of swallow" in dom  # asv's js_load_failure
    assert "flot-base" not in dom
    localise(html)
    with preview(conf, env, html) as url:
        dom, console = chromium(url + GRAPH)
    assert "continental origin" not in dom
    assert re.search(r'<canvas class="flot-base"', dom) and 'class="flot-overlay"' in dom
    labels = re.findall(r'class="legendLabel">([^<]*)<', dom)
    assert sorted(labels) == [f"case-dense(units=10)@32x512; machine-{m}; pass-forward"
                              for m in MACHINES], labels
    assert "Uncaught" not in console, console


@pytest.mark.parametrize("make, message", [
    (lambda d: d / "missing", "no such directory; expected the html_dir written by `asv publish`"),
    (lambda d: d, "is not an asv html directory; expected the html_dir"),
])
def test_bad_html_dir_is_one_line_exit_2(tmp_path, make, message):
    p = subprocess.run([sys.executable, SCRIPT, make(tmp_path)], capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and message in p.stderr, p.stderr


def test_unknown_cdn_asset_is_named_and_nothing_is_fetched(tmp_path):
    (tmp_path / "asv.js").write_text("")
    page = '<script src="https://cdn.example/new-lib-9.js" integrity="x"></script>'
    (tmp_path / "index.html").write_text(page)
    p = subprocess.run([sys.executable, SCRIPT, tmp_path], capture_output=True, text=True)
    assert p.returncode == 1 and p.stderr.count("\n") == 1, p.stderr
    assert "https://cdn.example/new-lib-9.js" in p.stderr and "ASSETS" in p.stderr
    assert (tmp_path / "index.html").read_text() == page and not (tmp_path / "vendor").exists()


def test_every_cdn_tag_of_the_installed_asv_is_known():
    """An asv upgrade that changes its CDN list fails here, before anyone publishes."""
    page = asv_html.localise(ASV_WWW_INDEX.read_text())
    assert "://" not in "".join(re.findall(r"<(?:script|link)\b[^>]*>", page))
    assert page.count('src="vendor/') + page.count('href="vendor/') == len(asv_html.ASSETS)
