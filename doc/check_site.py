"""Check the built site in a real headless browser, and check its links.

    sphinx-build -W --keep-going -b html doc doc/_build/html
    python doc/check_site.py [--site doc/_build/html] [--offline]

1. The API reference: every public method of every class on the
   reference's pages has its own entry there (an element with its full name
   as id); a public attribute is named on the page.
2. Links, on every built page: each internal link must name an existing file,
   and its ``#fragment`` an element of that page. Each external link is
   requested once: an HTTP error status fails the check; a host that cannot be
   reached from this machine is listed as unverified (``--offline`` skips
   them all).
3. A headless Chromium, driven by Selenium, serves the site over HTTP and
   opens the home page, a user-guide page, an API page and gallery pages. On
   each it checks that every image loaded, that the browser logged no error
   (a missing stylesheet or script), and that every same-site link it holds
   answers 200; it saves a screenshot of each to ``<site>/../screenshots``.
   The search page must find "early stopping".

The browser and its driver come from the distribution's packages (Debian:
``apt-get install chromium chromium-driver``); nothing is downloaded at run
time. The check exits non-zero on the first kind of failure it reports. CI
does not run it (it needs the built site and a browser).
"""
import argparse
import functools
import http.server
import importlib
import inspect
import re
import shutil
import sys
import threading
import urllib.error
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

ROOT = Path(__file__).resolve().parent
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
DRIVERS = ("chromedriver",)
# The pages the browser opens: home, a user-guide page, an API page, the
# gallery and one of its examples.
PAGES = ("index.html", "binning.html", "generated/hgbt.HistGBDTRegressor.html",
         "auto_examples/index.html", "auto_examples/plot_partial_dependence.html")


class _Page(HTMLParser):
    """The ids and the link targets of one HTML page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids, self.links = set(), []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("name"):
            self.ids.add(attrs["name"])
        for key in ("href", "src"):
            if attrs.get(key) and tag in ("a", "img", "link", "script", "source"):
                self.links.append(attrs[key])


@functools.cache
def _parse(path):
    page = _Page()
    page.text = path.read_text(encoding="utf-8", errors="replace")
    page.feed(page.text)
    return page


def check_api(site):
    """Each class page documents every public method and names every public
    attribute of the class (builtins' own members, such as an exception's
    ``with_traceback``, aside)."""
    failures, n_members = [], 0
    for page in sorted((site / "generated").glob("hgbt.*.html")):
        module_name, _, name = page.stem.rpartition(".")
        obj = getattr(importlib.import_module(module_name), name)
        if not inspect.isclass(obj):
            continue
        ids, text = _parse(page).ids, _parse(page).text
        for member in dir(obj):
            owner = next((k for k in obj.__mro__ if member in vars(k)), None)
            if member.startswith("_") or owner is None or owner.__module__ == "builtins":
                continue
            n_members += 1
            if callable(getattr(obj, member, None)) or isinstance(vars(owner)[member], property):
                if f"{page.stem}.{member}" not in ids:
                    failures.append(f"{page.name}: no entry for {page.stem}.{member}")
            elif not re.search(rf"\b{re.escape(member)}\b", text):
                failures.append(f"{page.name}: the attribute {member} is not named")
    print(f"API reference: {n_members} public members of its classes, "
          f"{len(failures)} missing")
    return failures


def check_links(site, offline):
    """Internal links and fragments of every page; external links once each."""
    broken, external = [], {}
    for path in sorted(site.rglob("*.html")):
        if path.relative_to(site).parts[0] == "_static":
            continue  # the theme's template fragments, not pages
        for link in _parse(path).links:
            parts = urlsplit(link)
            if parts.scheme in ("http", "https"):
                external.setdefault(link, path.relative_to(site))
                continue
            if parts.scheme or link.startswith("//") or not (parts.path or parts.fragment):
                continue  # mailto:, javascript:, data:, a bare "#"
            target = path if not parts.path else (path.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            where = f"{path.relative_to(site)}: {link}"
            if not target.is_file():
                broken.append(f"{where} (no such file)")
            elif parts.fragment and target.suffix == ".html" and \
                    unquote(parts.fragment) not in _parse(target).ids:
                broken.append(f"{where} (no element #{parts.fragment})")
    print(f"internal links: {len(broken)} broken")
    unverified = []
    for url, page in ([] if offline else sorted(external.items())):
        request = urllib.request.Request(url, method="HEAD",
                                         headers={"User-Agent": "hgbt-doc-check"})
        try:
            urllib.request.urlopen(request, timeout=15).close()
        except urllib.error.HTTPError as exc:
            if exc.code in (403, 405, 429):  # a host that refuses HEAD or robots
                unverified.append(f"{url} (HTTP {exc.code})")
            else:
                broken.append(f"{page}: {url} (HTTP {exc.code})")
        except (urllib.error.URLError, OSError) as exc:
            unverified.append(f"{url} ({getattr(exc, 'reason', exc)})")
    n_unverified = len(external) if offline else len(unverified)
    print(f"external links: {len(external)}, {len(external) - n_unverified} answered, "
          f"{n_unverified} not verified from here")
    for line in unverified:
        print("  not verified:", line)
    return broken


def _executable(names, what):
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    sys.exit(f"No {what} found ({', '.join(names)}): install the distribution's packages, "
             "e.g. `apt-get install chromium chromium-driver` on Debian.")


def _serve(site):
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = _QuietServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # the browser closing a connection early (a broken pipe) is not a failure


# A resource on another host that this machine cannot reach (the MathJax that
# scikit-learn's inherited docstrings ask for, from a CDN) is unverified here,
# as an unreachable external link is; any other console error fails.
_UNREACHABLE = ("net::ERR_NAME_NOT_RESOLVED", "net::ERR_INTERNET_DISCONNECTED",
                "net::ERR_CONNECTION_REFUSED", "net::ERR_ADDRESS_UNREACHABLE")


_BROKEN_IMAGES = ("return Array.from(document.images)"
                  ".filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src);")
_SAME_SITE_STATUS = """
const done = arguments[arguments.length - 1];
const urls = [...new Set(Array.from(document.querySelectorAll('a[href]'))
    .map(a => a.href.split('#')[0]).filter(u => u.startsWith(location.origin)))];
Promise.all(urls.map(u => fetch(u, {method: 'HEAD'}).then(r => [u, r.status])
    .catch(e => [u, String(e)])))
    .then(rs => done([urls.length, rs.filter(r => r[1] !== 200)]));
"""


def check_in_browser(site, shots):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = _executable(BROWSERS, "Chromium")
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                 "--window-size=1280,1600", "--disable-gpu"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "SEVERE"})
    service = Service(executable_path=_executable(DRIVERS, "chromedriver"))
    server, base = _serve(site)
    failures = []
    driver = webdriver.Chrome(options=options, service=service)
    try:
        driver.set_script_timeout(60)
        shots.mkdir(parents=True, exist_ok=True)
        for page in PAGES:
            driver.get(base + page)
            WebDriverWait(driver, 20).until(
                lambda d: d.execute_script("return document.readyState") == "complete")
            n_images = len(driver.find_elements(By.TAG_NAME, "img"))
            missing = driver.execute_script(_BROKEN_IMAGES)
            errors = []
            for entry in driver.get_log("browser"):
                message = entry["message"]
                if entry["level"] != "SEVERE" or "favicon.ico" in message:
                    continue
                if not message.startswith(base) and any(e in message for e in _UNREACHABLE):
                    print(f"  not verified from here: {message.split(' ')[0]}")
                else:
                    errors.append(message)
            n_links, bad = driver.execute_async_script(_SAME_SITE_STATUS)
            name = page.replace("/", "_").removesuffix(".html")
            driver.save_screenshot(str(shots / f"{name}.png"))
            print(f"{page}: {n_images} images, {len(missing)} not loaded; "
                  f"{n_links} same-site links, {len(bad)} not 200; "
                  f"{len(errors)} console errors")
            failures += [f"{page}: image not loaded: {src}" for src in missing]
            failures += [f"{page}: link {url} answered {status}" for url, status in bad]
            failures += [f"{page}: console: {message}" for message in errors]
            if page.startswith("auto_examples/plot_") and n_images == 0:
                failures.append(f"{page}: an example page without a figure")
        driver.get(base + "search.html?q=early+stopping")
        try:
            # results arrive one by one; Sphinx's summary line ends the search
            WebDriverWait(driver, 60).until(
                lambda d: "Search finished" in d.find_element(By.TAG_NAME, "body").text)
        except Exception:  # noqa: BLE001 - reported as a failure below
            pass
        results = driver.find_elements(By.CSS_SELECTOR, "#search-results li, ul.search li")
        titles = [r.text.split("\n")[0] for r in results[:5]]
        driver.save_screenshot(str(shots / "search_early_stopping.png"))
        print(f"search 'early stopping': {len(results)} results, first: {titles}")
        if not any("early stopping" in r.text.lower() for r in results):
            failures.append("the search page found no page on 'early stopping'")
    finally:
        driver.quit()
        server.shutdown()
    print(f"screenshots: {shots}")
    return failures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument("--offline", action="store_true",
                        help="do not request external links")
    parser.add_argument("--no-browser", action="store_true", help="check the links only")
    args = parser.parse_args(argv)
    site = args.site.resolve()
    if not (site / "index.html").is_file():
        sys.exit(f"No built site at {site}: build it first with\n"
                 "    sphinx-build -W --keep-going -b html doc doc/_build/html")
    failures = check_api(site) + check_links(site, args.offline)
    if not args.no_browser:
        failures += check_in_browser(site, site.parent / "screenshots")
    for failure in failures:
        print("FAIL", failure)
    print("OK" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
