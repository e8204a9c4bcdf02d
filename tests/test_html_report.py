"""The HTML report of a real small run: sections, embedded plots, no URL, escaped text."""
import base64
import copy
import re
import shutil
import subprocess

import pytest

from conftest import load, run_kmicro
from kmicro.report import html as html_report, plots

# One xdist worker runs these tests (`--dist loadgroup`): shared module fixtures or paths.
pytestmark = pytest.mark.xdist_group("html_report")

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
PEAKS = {"matmul_gflops": 50.0, "copy_gbps": 10.0}
EVIL = 'RuntimeError: <script>alert("x")</script> & more'


@pytest.fixture(scope="module")
def ops_json(tmp_path_factory):
    path = tmp_path_factory.mktemp("run") / "ops.json"
    p = run_kmicro("ops", "--stacks", "numpy", "--ops", "dense,batchnorm", "--quick",
                   "--shapes", "2,4,4,3;2,8", "--json", str(path), timeout=300)
    assert p.returncode == 0, p.stderr
    return path


@pytest.fixture(scope="module")
def records(ops_json):
    """The real run plus one failed op, one model and one diagnose record of other kinds."""
    recs = load(ops_json)
    failed = dict(copy.deepcopy(recs[0]), stack="other", status="error", median_s=None,
                  error=EVIL)
    model = {"stack": "numpy", "case": "resnet_bn@b32", "model": "resnet_bn", "pass": "train",
             "status": "ok", "epoch_s": 91.5, "step_s": 0.058, "eval_s": 4.0, "compile_s": 2.0}
    finding = {"stack": "theano", "case": "batchnorm@cl", "data_format": "channels_last",
               "status": "ok", "kind": "diagnose",
               "findings": [{"reductions": 8, "meaning": "BN <not> on cuDNN"}]}
    return recs + [failed, model, finding]


@pytest.fixture(scope="module")
def page(records, tmp_path_factory):
    path = tmp_path_factory.mktemp("html") / "report.html"
    html_report.write(records, path, peaks=PEAKS)
    return path


def test_sections_present(page):
    text = page.read_text()
    for anchor in ("findings", "summary", "ops", "plots", "models", "diagnose", "environment",
                   "reference"):
        assert f"id='{anchor}'" in text
    assert "Not measured by this run" in text and "285-292 s" in text and "82 s" in text
    assert "resnet_bn@b32" in text and "91.5 s" in text


def test_plots_are_embedded_pngs(page):
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page.read_text())
    assert len(images) >= 3  # dense and batchnorm comparisons, roofline
    assert all(base64.b64decode(i).startswith(b"\x89PNG") for i in images)
    assert 'alt="roofline"' in page.read_text()


def test_self_contained_and_escaped(page):
    text = page.read_text()
    assert "http://" not in text and "https://" not in text and "<script" not in text
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; more" in text
    assert "BN &lt;not&gt; on cuDNN" in text


def test_failed_cell_carries_error_in_title(page):
    assert re.search(r'<td class="num bad" title="[^"]*&lt;script&gt;[^"]*">error</td>',
                     page.read_text())


def test_load_and_write_read_files(ops_json, tmp_path):
    out = html_report.write(html_report.load([ops_json]), tmp_path / "sub" / "r.html")
    assert out.exists() and "data:image/png;base64," in out.read_text()


def test_stacked_shares_png():
    png = plots.stacked_shares({"tensorflow": {"Conv2D": 0.02, "BatchNormalization": 0.03},
                                "jax": {"Conv2D": 0.03, "Dense": 0.001}})
    assert png.startswith(b"\x89PNG") and len(png) > 5000


@pytest.mark.skipif(not shutil.which(CHROMIUM), reason="chromium is not installed")
def test_screenshot_renders(page, tmp_path):
    shot = tmp_path / "shot.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                    "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'prof'}",
                    f"--screenshot={shot}", "--window-size=1400,2000", page.as_uri()],
                   capture_output=True, timeout=90, check=False)
    assert shot.exists() and shot.read_bytes().startswith(b"\x89PNG")
    assert shot.stat().st_size > 20_000


def test_cli_writes_html_report(ops_json, tmp_path):
    out = tmp_path / "report.html"
    p = run_kmicro("report", str(ops_json), "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert "id='ops'" in out.read_text() and "data:image/png;base64," in out.read_text()
