"""Make the site of `asv publish` viewable with no internet.

  .venv/bin/python scripts/asv_html.py [HTML_DIR]      # default: .asv/html

asv's index.html loads jQuery, flot, bootstrap and three small plugins from CDNs and sends
the browser to error.html when one fails to load, so an offline machine (or a copied site)
shows no graph. This fetches the same versions as npm tarballs (sha512 pinned below and
checked against the registry's dist.integrity and the download), caches them in
.cache/asv-assets/, copies the files into HTML_DIR/vendor/ and points the <script>/<link>
tags of every published page there. Run it after each `asv publish` (which rewrites
index.html); running it twice changes nothing. Once the tarballs are cached, no network is used.
"""
from __future__ import annotations

import argparse
import base64
import functools
import hashlib
import io
import json
import re
import sys
import tarfile
import urllib.request
from pathlib import Path

CACHE = Path(__file__).resolve().parent.parent / ".cache" / "asv-assets"
REGISTRY = "https://registry.npmjs.org"
CDNJS = "https://cdnjs.cloudflare.com/ajax/libs"
# The CDN URLs of asv 0.6.6's www/index.html -> (npm package, version, file in the package).
# flot 0.8.3 on npm has no minified files; stupidtable 1.0.1 is not on npm at all, so the same
# plugin's only npm release (stupid-table-plugin 1.1.3, same API) stands in for it.
ASSETS = {
    "https://code.jquery.com/jquery-3.3.1.min.js": ("jquery", "3.3.1", "dist/jquery.min.js"),
    f"{CDNJS}/flot/0.8.3/jquery.flot.min.js": ("flot", "0.8.3", "jquery.flot.js"),
    f"{CDNJS}/flot/0.8.3/jquery.flot.time.min.js": ("flot", "0.8.3", "jquery.flot.time.js"),
    f"{CDNJS}/flot/0.8.3/jquery.flot.selection.min.js":
        ("flot", "0.8.3", "jquery.flot.selection.js"),
    f"{CDNJS}/flot/0.8.3/jquery.flot.categories.min.js":
        ("flot", "0.8.3", "jquery.flot.categories.js"),
    "https://cdn.jsdelivr.net/npm/flot-orderbars@1.0.0/js/jquery.flot.orderBars.js":
        ("flot-orderbars", "1.0.0", "js/jquery.flot.orderBars.js"),
    f"{CDNJS}/stupidtable/1.0.1/stupidtable.min.js":
        ("stupid-table-plugin", "1.1.3", "stupidtable.min.js"),
    f"{CDNJS}/blueimp-md5/2.19.0/js/md5.min.js": ("blueimp-md5", "2.19.0", "js/md5.min.js"),
    "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/js/bootstrap.min.js":
        ("bootstrap", "3.1.1", "dist/js/bootstrap.min.js"),
    "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/css/bootstrap.min.css":
        ("bootstrap", "3.1.1", "dist/css/bootstrap.min.css"),
}
# dist.integrity of each tarball, as the registry gave it when this list was written.
INTEGRITY = {
    ("jquery", "3.3.1"): "sha512-Ubldcmxp5np52/ENotGxlLe6aGMvmF4R8S6tZjsP6Knsaxd/xp3Zrh50cG93l"
                         "R6nPXyUFwzN3ZSOQI0wRJNdGg==",
    ("flot", "0.8.3"): "sha512-xg2otcTJDvS+ERK+my4wxG/ASq90QURXtoM4LhacCq0jQW2jbyjdttbRNqU2cPy"
                       "krpMvJ6b2uSp6SAgYAzj9tQ==",
    ("flot-orderbars", "1.0.0"): "sha512-Jv51fvzevUjNXEeozpwEKfPjhiZhfiJddv0WHjduUTCmSF+7T5K7C9"
                                 "c9Y1wIVmUhDBv5fLMjgbwKecT0GIKPZA==",
    ("stupid-table-plugin", "1.1.3"): "sha512-2Vk7XouQPxUQPRe9w0Fu7ZZ8kHLK7rDoLMsCgtKxRNJ7f4dSO"
                                      "GvW9CkHsq5wD6QsaEnWoyLBYH3xOEsrK3yWBg==",
    ("blueimp-md5", "2.19.0"): "sha512-DRQrD6gJyy8FbiE4s+bDoXS9hiW3Vbx5uCdwvcCf3zLHL+Iv7LtGHLp"
                               "r+GZV8rHG8tK766FGYBwRbu8pELTt+w==",
    ("bootstrap", "3.1.1"): "sha512-TAzqS8E/ISpVHP29gYhy+1NSV+FJwApDVQhDfgLYsIuUDJiqJzH2DfORN5t"
                            "iu+Ie2iBLrzEG34t4Rf465cigqg==",
}
TAG = re.compile(r"<(?:script|link)\b[^>]*>")
REMOTE = re.compile(r'\b(src|href)="(https?://[^"]+)"')
CDN_ONLY = re.compile(r'\s+(?:integrity|crossorigin|referrerpolicy)="[^"]*"')


class Failure(Exception):
    """One line for the user; `code` is the exit status."""

    def __init__(self, message, code=1):
        super().__init__(message)
        self.code = code


def local_path(url) -> str:
    """Where an asset lives, relative to the html dir: vendor/<package>-<version>/<file>."""
    package, version, member = ASSETS[url]
    return f"vendor/{package}-{version}/{Path(member).name}"


def sri(data) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def _get(url) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.read()
    except OSError as exc:  # URLError, HTTPError, timeouts
        raise Failure(f"cannot fetch {url}: {exc}") from None


@functools.lru_cache(maxsize=None)  # flot and bootstrap give several files each
def tarball(package, version) -> bytes:
    """The npm tarball, from the cache when it is there and intact, else from the registry."""
    pinned = INTEGRITY[(package, version)]
    cached = CACHE / f"{package}-{version}.tgz"
    if cached.is_file() and sri(cached.read_bytes()) == pinned:
        return cached.read_bytes()
    try:
        dist = json.loads(_get(f"{REGISTRY}/{package}/{version}"))["dist"]
    except (ValueError, KeyError):
        raise Failure(f"{REGISTRY}/{package}/{version}: not npm package metadata") from None
    if dist["integrity"] != pinned:
        raise Failure(f"{package}@{version}: the registry's integrity {dist['integrity']} "
                      f"is not the pinned {pinned}")
    data = _get(dist["tarball"])
    if sri(data) != pinned:
        raise Failure(f"{package}@{version}: {dist['tarball']} does not match its sha512")
    CACHE.mkdir(parents=True, exist_ok=True)
    cached.write_bytes(data)
    return data


def vendor(html) -> None:
    """Copy every asset out of its tarball into html/vendor/."""
    for url, (package, version, member) in ASSETS.items():
        with tarfile.open(fileobj=io.BytesIO(tarball(package, version))) as tar:
            data = tar.extractfile(f"package/{member}").read()
        target = html / local_path(url)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def localise(page) -> str:
    """The page with its CDN tags pointing into vendor/ (SRI and CORS attributes dropped)."""
    def tag(match):
        text = match.group(0)
        remote = REMOTE.search(text)
        if not remote:
            return text
        if remote.group(2) not in ASSETS:
            raise Failure(f"unknown remote asset {remote.group(2)} (a newer asv?): "
                          "add it to ASSETS in scripts/asv_html.py")
        text = text.replace(remote.group(0), f'{remote.group(1)}="{local_path(remote.group(2))}"')
        return CDN_ONLY.sub("", text)
    return TAG.sub(tag, page)


def check_html_dir(html) -> None:
    expected = "the html_dir written by `asv publish` (index.html, asv.js)"
    if not html.is_dir():
        raise Failure(f"{html}: no such directory; expected {expected}", code=2)
    if not (html / "index.html").is_file() or not (html / "asv.js").is_file():
        raise Failure(f"{html} is not an asv html directory; expected {expected}", code=2)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="scripts/asv_html.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("html_dir", nargs="?", default=".asv/html", help="default: .asv/html")
    html = Path(p.parse_args(argv).html_dir)
    try:
        check_html_dir(html)
        pages = {page: page.read_text() for page in sorted(html.glob("*.html"))}
        local = {page: localise(text) for page, text in pages.items()}
        vendor(html)
        changed = [page for page in pages if local[page] != pages[page]]
        for page in changed:
            page.write_text(local[page])
    except Failure as exc:
        print(f"asv_html: {exc}", file=sys.stderr)
        return exc.code
    print(f"{html}: {len(ASSETS)} assets in vendor/, {len(changed)} of {len(pages)} pages "
          "rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
