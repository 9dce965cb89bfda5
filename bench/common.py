"""Helpers shared by the benchmark scripts: machine description, tables, plots."""
from __future__ import annotations

import os
import platform
import re
import time
from pathlib import Path

# Benchmarks build their own temporary stores; with no system keychain their PII sealing
# needs a passphrase, and this one protects nothing of the user's.
os.environ.setdefault("CHUNKWISE_PASSPHRASE", "chunkwise-benchmark-only")

OUT = Path(__file__).resolve().parent / "out"
MODELS = OUT / "models"   # model files the benches make once (requantised copies, Gemma assembled); not in git
DOCS_IMG = Path(__file__).resolve().parents[1] / "docs" / "img"


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        mem = 0
    import llama_cpp

    return (f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB RAM, Python {platform.python_version()}, "
            f"llama-cpp-python {llama_cpp.__version__}")


def table(headers: list[str], rows: list[list]) -> str:
    cells = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"
    return "\n".join([line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [line(r) for r in cells])


def save_plot(fig, name: str) -> Path:
    DOCS_IMG.mkdir(parents=True, exist_ok=True)
    path = DOCS_IMG / name
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return path


class Timer:
    def __enter__(self):
        self.t = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.t


def time_each_call(owner, name: str, record) -> None:
    """Wrap ``owner.<name>`` so that each call's seconds and its first argument go to
    ``record(seconds, first)``, the call itself unchanged (the benches time the runtime's decodes)."""
    real = getattr(owner, name)

    def timed(first, *args, **kwargs):
        start = time.perf_counter()
        try:
            return real(first, *args, **kwargs)
        finally:
            record(time.perf_counter() - start, first)
    setattr(owner, name, timed)


def last_line_words(text: str) -> tuple[str, ...]:
    """The lower-cased words of *text*'s last line: what :func:`near_line` compares."""
    return tuple(re.findall(r"[a-z0-9']+", text.rstrip().split("\n")[-1].lower()))


def near_line(text: str, lines):
    """The payload of the first of *lines* -- (words, set of them, payload) each, words from
    :func:`last_line_words` -- whose last line is near *text*'s, or None.  Near: the same words, the same
    last four words, one inside the other at four words or more, or half their distinct words shared.
    The one rule by which evaluation cases and training fragments are kept apart (bench/cli_profile.py
    near_seen, bench/data/tried/near_cases.py).

    >>> lines = [(("my", "phone", "number", "is"), {"my", "phone", "number", "is"}, "case 1")]
    >>> near_line("Hi,\\n\\nMy phone number is", lines), near_line("Ring me on", lines)
    ('case 1', None)
    """
    w = last_line_words(text)
    sw = set(w)
    if not w:
        return None
    for cw, cs, payload in lines:
        if (w == cw or len(w) >= 4 and len(cw) >= 4 and w[-4:] == cw[-4:]
                or len(sw) >= 3 and len(cs) >= 3 and len(sw & cs) / len(sw | cs) >= 0.5
                or min(len(w), len(cw)) >= 4 and (" ".join(w) in " ".join(cw) or " ".join(cw) in " ".join(w))):
            return payload
    return None
