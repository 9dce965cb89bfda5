"""Every figure the README's benchmark summary quotes is printed by the bench command it names.

The summary is a list of bullets; each names the ``bench/<script>.py`` that measured it, and each
number it quotes (a percentage, a time, a ratio) must appear in that script's saved output under
``bench/out/`` (written by ``python bench/run_all.py``).  A figure typed by hand, or left behind
when a re-run changed it, fails here.  (Catches: a README number with no bench line behind it.)
"""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIGURE = re.compile(r"(?<![\w.,])(\d+(?:,\d{3})*(?:\.\d+)?)(\s?(?:%|ms\b|×|x\b))")
SCRIPT = re.compile(r"bench/([a-z_]+)\.py")


def summary_bullets() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\nMeasured on this project's 2-core machine", 1)[1].split("\n## ", 1)[0]
    return [b.strip() for b in re.split(r"\n- ", "\n" + section)[1:]]


def outputs_of(script: str) -> str:
    files = sorted((ROOT / "bench" / "out").glob(f"{script}*.txt"))
    return "\n".join(f.read_text(encoding="utf-8") for f in files)


def found(number: str, unit: str, text: str) -> bool:
    """*number* as printed: a percentage with its sign, anything else as a whole number token."""
    tail = r"\s?%" if unit.strip() == "%" else r"(?![\d.])"
    for form in {number, number.replace(",", "")}:
        if re.search(r"(?<![\d.])" + re.escape(form) + tail, text):
            return True
    return False


def test_every_summary_figure_has_a_bench_line_behind_it():
    bullets = summary_bullets()
    assert len(bullets) >= 5
    missing = []
    for bullet in bullets:
        scripts = SCRIPT.findall(bullet)
        assert scripts, f"this README figure names no bench command: {bullet[:100]}..."
        text = "\n".join(outputs_of(s) for s in scripts)
        figures = FIGURE.findall(bullet)
        assert text or not figures, f"no saved output in bench/out/ for {scripts}: run python bench/run_all.py"
        for number, unit in figures:
            if not found(number, unit, text):
                missing.append(f"{number}{unit} ({', '.join(scripts)})")
    assert not missing, "README figures not in the bench output they cite: " + "; ".join(missing)


def test_the_check_catches_a_figure_typed_by_hand():
    """The check itself: a number that is not in the output is reported, one that is passes."""
    text = "| right value inserted | 56/93 (60%) |\n| p50 ms | 45.2 |"
    assert found("60", "%", text) and found("45.2", " ms", text)
    assert not found("59", "%", text) and not found("45", " ms", text) and not found("6", "%", text)
