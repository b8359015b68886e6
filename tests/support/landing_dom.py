"""Reading the figures the landing page and the HTML report carry in data attributes (exact values)."""

from __future__ import annotations

from html.parser import HTMLParser

from tests.support.png import Image

# Evaluated in the laid-out page (tests/support/cdp.py): page and table widths, the smallest text.
LAYOUT = """(() => {
  const texts = Array.from(document.querySelectorAll('body *')).filter(e =>
    e.childNodes.length && Array.from(e.childNodes).some(n => n.nodeType === 3 && n.textContent.trim())
    && !e.closest('svg') && e.getClientRects().length);
  return {
    page: [document.documentElement.scrollWidth, window.innerWidth],
    tables: Array.from(document.querySelectorAll('.scroll')).map(e => [e.scrollWidth, e.clientWidth]),
    smallestText: Math.min(...texts.map(e => parseFloat(getComputedStyle(e).fontSize))),
    smallestChartText: Math.min(...Array.from(document.querySelectorAll('svg text'))
      .map(e => e.getBoundingClientRect().height)),
    charts: document.querySelectorAll('svg').length,
  };
})()"""


class PageData(HTMLParser):
    """The page's ``data-figure`` values, its table rows by breakdown, its months and provenance tags."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.focus = ""
        self.figures: dict[str, str] = {}
        self.rows: dict[str, dict[str, dict[str, str]]] = {}  # breakdown -> name -> data attributes
        self.months: dict[str, dict[str, str]] = {}
        self.provenance: dict[str, dict[str, dict[str, str]]] = {}
        self.external: list[str] = []
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        for name in ("src", "href", "xlink:href", "action", "srcset", "poster"):
            if name in found and (":" in found[name].split("/")[0] or found[name].startswith("//")):
                self.external.append(f"<{tag} {name}={found[name]!r}>")
        if "url(" in found.get("style", "") or tag in ("script", "link", "img", "iframe", "object", "embed"):
            self.external.append(f"<{tag}>")
        if tag == "main":
            self.focus = found.get("data-month", "")
        if "data-figure" in found:
            self.figures[found["data-figure"]] = found["data-value"]
        if "data-breakdown" in found and "data-rest" not in found:
            self.rows.setdefault(found["data-breakdown"], {})[found["data-name"]] = found
        if tag == "tr" and "data-month" in found:
            self.months[found["data-month"]] = found
        if "data-provenance" in found:
            self.provenance.setdefault(found["data-provenance"], {})[found.get("data-name", "")] = found


def assert_not_blank(image: Image, width: int) -> None:
    """A screenshot of a rendered page: the asked width, many colours, most of it not one colour."""
    assert image.width == width and image.height >= 600, (image.width, image.height)
    colours = image.pixels(step=3)
    assert len(colours) >= 50, f"only {len(colours)} colours: a blank or broken page"
    commonest = colours.most_common(1)[0][1]
    assert commonest / sum(colours.values()) < 0.9, "nine tenths of the page is one colour"
