"""Personal details on phrasings nobody stored: right value in the right slot, never someone else's.

The path users run: each fictional user's profile (bench/data/personal/profiles.json: ten
fields and two snippets, 2-3 contexts each, as a user types them into the library) plus a
store learned from a persona's sent mail (Tools → Learn from my writing: gamma 0.5, corpus as
teacher, kNN rows), and each case generated through the editor's own framing and request
settings (``body_prompt``, 24 tokens, greedy, stop at a blank line, chunks on at the default
threshold).

Cases (bench/data/personal/cases.json, written before matching was changed) end where the next
thing is written:

  positive     the user's own detail of one field comes next: right = that chunk inserted
  third_party  someone else's detail, a time, a place, a help desk: the user's value must not come
  neutral      an ordinary email opening: nothing personal inserted

Printed per split (dev: tune on it; test: frozen at the commit named in docs/benchmarks.md,
never tuned on), per field: right value inserted, wrong field inserted, third-party and neutral
insertions, and invented details (a phone number, email, web or street address the model
wrote itself, found by core/details.py).

    python bench/personal.py                  # both splits, default settings
    python bench/personal.py --split dev --threshold 0.1 --cases 80
    python bench/personal.py --ablate         # dev split: each gate switched off in turn
    python bench/personal.py --feedback       # test cases before and after the user writes the dev cases
    python bench/personal.py --feedback dev   # the same within dev, in two folds (diagnosis)
    python bench/personal.py --data fields    # bench/data/fields: field types no other set stores
                                              # (passport, staff, membership numbers, postcode...)
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import MODELS, OUT, machine, table  # noqa: E402
from chunkwise.core import ChunkStore, Engine  # noqa: E402
from chunkwise.core.engine import READY_THRESHOLD, detail_offered  # noqa: E402
from chunkwise.core.corpus import read_corpus  # noqa: E402
from chunkwise.core.details import find_details  # noqa: E402
from chunkwise.core.settings import Settings  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data" / "personal"
PERSONAS = ROOT / "bench" / "data" / "personas"
# Which persona's sent mail each user's learned store comes from (styles differ on purpose).
LEARNED_FROM = {"ana": "mara", "ben": "teo", "chloe": "mara", "dara": "mara", "femi": "teo", "gus": "rhea"}


def body_prompt(text: str) -> str:
    """The editor's body framing (app/window.py body_prompt, with no To or Subject)."""
    return text.rstrip(" ")


def paragraph_starts(text: str) -> list[str]:
    r"""The text up to each paragraph start (after each blank line): where a paragraph's first words go.

    >>> paragraph_starts("Hi Tom,\n\nThanks.\n\nBest,\nAna")
    ['Hi Tom,\n\n', 'Hi Tom,\n\nThanks.\n\n']
    """
    paragraphs = text.split("\n\n")
    return ["\n\n".join(paragraphs[:k]) + "\n\n" for k in range(1, len(paragraphs))]


def load_cases(split: str) -> list[dict]:
    cases = json.loads((DATA / "cases.json").read_text(encoding="utf-8"))
    test_ids = set(json.loads((DATA / "split.json").read_text(encoding="utf-8"))["test"])
    if split == "all":
        return cases
    return [c for c in cases if (c["id"] in test_ids) == (split == "test")]


def build_store(path: Path, user: dict) -> dict[int, str]:
    """The user's library as they would type it: chunk id -> field."""
    field_of = {}
    with ChunkStore(path) as store:
        for field, entry in user["fields"].items():
            kind = "snippet" if field.startswith("snippet") else "pii"
            label = field.removeprefix("snippet_").replace("_", " ")
            cid = store.add_chunk(entry["value"], kind=kind, label=label, contexts=entry["contexts"])
            field_of[cid] = field
    return field_of


def learn(engine: Engine, persona: str, teacher: str = "corpus") -> int:
    """Learn *persona*'s sent mail into the engine's store: as Learn from my writing does (the corpus
    as teacher), or with ``teacher="gemma"``: Gemma 3 270M (the optional extra) as KCD-LM teacher."""
    from chunkwise.core.learning import load_teacher, mine

    files = sorted(str(p) for p in (PERSONAS / persona).glob("sent-*.txt"))
    if not files:
        return 0
    if teacher == "corpus":
        return mine(engine, read_corpus(files), gamma=0.5, knn=True, corpus_teacher=True).new_chunks
    from chunkwise.core.models import gemma_path

    rt = load_teacher(gemma_path(MODELS), n_threads=2)
    try:
        return mine(engine, read_corpus(files), gamma=0.5, knn=True, teacher=rt).new_chunks
    finally:
        rt.close()


READY = READY_THRESHOLD       # --ready: the detail alternative's threshold (a dev sweep), the editor's by default


def run_case(engine: Engine, case: dict, settings: Settings, alternative: bool = True) -> dict:
    """The editor's own request at the case's cursor, and (*alternative*) the detail alternative it works
    out after it (app/window.py, GenerationRequest.readier: the same request at READY_THRESHOLD, or,
    where the suggestion brings a library entry, another value of its field; kept where it brings an
    entry the suggestion does not, in its place; Alt+] shows it first)."""
    request = settings.suggestion_request(body_prompt(case["text"]), lifted=case["text"].endswith(" "))
    result = suggest(engine, request)
    result["alternative"] = None
    readier = request.readier(settings.threshold, result["pieces"]) if alternative else None
    if readier is not None and settings.threshold > READY:
        # (at READY where the suggestion brought no entry; else another value of its field, as sure)
        ready = suggest(engine, readier if readier.instead_of else replace(readier, threshold=READY))
        offered = detail_offered(ready["pieces"], result["pieces"])
        result["alternative"] = offered.chunk_id if offered else None
    return result


def suggest(engine: Engine, request) -> dict:
    """One suggestion: its text and pieces, the chunks in it, its time, and the details the model wrote itself."""
    t0 = time.perf_counter()
    generation = engine.stream(request)
    out = generation.completion()
    model_text = "".join(out.text[i] for i in range(len(out.text))
                         if not any(s.start <= i < s.end for s in out.spans))
    return {"text": out.text, "spans": [s.as_dict() for s in out.spans], "seconds": time.perf_counter() - t0,
            "invented": [shape for shape, _s, _e in find_details(model_text)], "pieces": generation.pieces}


def judge(case: dict, result: dict, field_of: dict[int, str]) -> dict:
    personal = [field_of[s["chunk_id"]] for s in result["spans"] if s["chunk_id"] in field_of]
    first = personal[0] if personal else None
    kind = case["kind"]
    alternative = field_of.get(result.get("alternative"))       # the detail one Alt+] away, if any
    verdict = {"kind": kind, "field": case.get("field"), "inserted": first,
               "invented": bool(result["invented"]), "alternative": alternative}
    if kind == "positive":
        verdict["right"] = first == case["field"]
        verdict["wrong_field"] = first is not None and first != case["field"]
        verdict["alt_right"] = not verdict["right"] and alternative == case["field"]
    else:
        verdict["false"] = first is not None
    return verdict


def case_line(case: dict, v: dict, text: str) -> str:
    """One judged case as -v prints it: OK / MISS for a positive, FALSE / ok for the rest."""
    flag = ("OK " if v.get("right") else "MISS") if v["kind"] == "positive" else ("FALSE" if v["false"] else "ok")
    alt = f"(Alt+] {v['alternative']}) " if v.get("alternative") else ""
    return (f"{flag:5} {case['id']} {case.get('field')} -> {v['inserted']} {alt}"
            f"{'INVENTED ' if v['invented'] else ''}| {case['text'][-60:]!r} => {text!r}")


def summarise(verdicts: list[dict]) -> dict:
    pos = [v for v in verdicts if v["kind"] == "positive"]
    tp = [v for v in verdicts if v["kind"] == "third_party"]
    neu = [v for v in verdicts if v["kind"] == "neutral"]
    return {
        "positives": len(pos), "right": sum(v["right"] for v in pos),
        "wrong_field": sum(v["wrong_field"] for v in pos),
        "third_party": len(tp), "third_party_inserted": sum(v["false"] for v in tp),
        "neutral": len(neu), "neutral_inserted": sum(v["false"] for v in neu),
        "invented": sum(v["invented"] for v in verdicts),
        # The detail alternative (Alt+]): where the suggestion missed, the right value one key away; and a
        # value of the user's one key away where another field, someone else's detail or nothing belongs.
        "alt_right": sum(v["alt_right"] for v in pos),
        "alt_wrong": sum(v["alternative"] is not None and v["alternative"] != v["field"] for v in pos),
        "alt_third_party": sum(v["alternative"] is not None for v in tp),
        "alt_neutral": sum(v["alternative"] is not None for v in neu),
        "per_field": {f: (sum(v["right"] for v in pos if v["field"] == f), sum(1 for v in pos if v["field"] == f))
                      for f in sorted({v["field"] for v in pos})},
    }


def user_engine(path: Path, user: dict, settings: Settings, runtime, model: str | None = None,
                learned_from: str | None = "mara") -> tuple[Engine, dict[int, str]]:
    """An engine on *user*'s library at *path* (the editor's threshold in *settings*), with the persona
    *learned_from*'s sent mail learned (None: the library alone); and chunk id -> field."""
    field_of = build_store(path, user)
    engine = Engine(model, store=ChunkStore(path), n_threads=2, threshold=settings.threshold, runtime=runtime)
    if learned_from:
        learn(engine, learned_from)
    engine.refresh()
    return engine, field_of


def judged(engine: Engine, case: dict, settings: Settings, field_of: dict[int, str], user: str,
           alternative: bool = True, verbose: bool = False, tag: str = "") -> tuple[dict, dict]:
    """One case run (:func:`run_case`) and judged (:func:`judge`): (verdict, result); -v prints it."""
    result = run_case(engine, case, settings, alternative)
    v = judge(case, result, field_of)
    v.update(id=case["id"], user=user, text=case["text"], out=result["text"])
    if verbose:
        print(tag + case_line(case, v, result["text"]), flush=True)
    return v, result


def evaluate(split: str, threshold: float | None = None, limit: int | None = None, learned: bool = True,
             verbose: bool = False, model: str | None = None) -> tuple[dict, list[dict]]:
    settings = Settings()
    if threshold is not None:
        settings.threshold = threshold
    profiles = json.loads((DATA / "profiles.json").read_text(encoding="utf-8"))
    cases = load_cases(split)[:limit] if limit else load_cases(split)
    by_user = defaultdict(list)
    for c in cases:
        by_user[c["user"]].append(c)
    verdicts = []
    with tempfile.TemporaryDirectory() as tmp:
        runtime = None
        for user, items in sorted(by_user.items()):
            engine, field_of = user_engine(Path(tmp) / f"{user}.db", profiles[user], settings, runtime, model,
                                           LEARNED_FROM.get(user, "mara") if learned else None)
            runtime = engine.runtime
            verdicts += [judged(engine, case, settings, field_of, user, verbose=verbose)[0] for case in items]
            engine.store.close()
        if runtime is not None:
            runtime.close()
    return summarise(verdicts), verdicts


def react(engine: Engine, case: dict, result: dict, field_of: dict[int, str], user: dict) -> int:
    """What the user does after one suggestion, learned as the editor learns it (Settings.learn_while_writing,
    on by default): where a value of theirs came that does not belong there (another field, someone
    else's place, a neutral opening) they press Esc, and the editor dismisses the suggestion's first
    chunk, whatever its kind, at the text before it (app/window.py ``_on_dismissed`` -> ``Engine.dismiss``);
    where their own detail comes next and was not inserted, they type it by hand (``Engine.learn_typed``).
    Returns how many places were learned."""
    prompt = body_prompt(case["text"])
    spans = result["spans"]
    learned = 0
    own = case["field"] if case["kind"] == "positive" else None          # what of theirs belongs here, if anything
    if any(sp["chunk_id"] in field_of and field_of[sp["chunk_id"]] != own for sp in spans):
        first = spans[0]
        learned += engine.dismiss(first["chunk_id"], prompt + result["text"][:first["start"]]) is not None
    if own is not None and not any(field_of.get(sp["chunk_id"]) == own for sp in spans):
        joiner = "" if prompt[-1:].isspace() else " "
        learned += len(engine.learn_typed(prompt + joiner + user["fields"][own]["value"]))
    return learned


def feedback_folds(measured: str) -> list[tuple[list[dict], list[dict]]]:
    """(cases written with learning, cases measured before and after) for --feedback: the dev cases
    taught and the test cases measured; or, for diagnosis on dev alone, dev in two folds (every other
    case), each taught in turn and the other measured."""
    if measured == "test":
        return [(load_cases("dev"), load_cases("test"))]
    dev = load_cases("dev")
    return [(dev[0::2], dev[1::2]), (dev[1::2], dev[0::2])]


def evaluate_feedback(measured: str = "test", verbose: bool = False, threshold: float | None = None,
                      model: str | None = None) -> dict[str, dict]:
    """--feedback: each user's measured cases before and after they wrote the taught cases with the
    editor learning from their corrections (:func:`react`), and the taught cases again after (the same
    phrasings, next time).  Measures what learning while writing carries to phrasings it never saw."""
    settings = Settings()
    if threshold is not None:
        settings.threshold = threshold
    profiles = json.loads((DATA / "profiles.json").read_text(encoding="utf-8"))
    passes: dict[str, list[dict]] = defaultdict(list)
    learned = 0
    with tempfile.TemporaryDirectory() as tmp:
        runtime = None
        for fold, (taught_all, measured_all) in enumerate(feedback_folds(measured)):
            for user in sorted(profiles):
                taught = [c for c in taught_all if c["user"] == user]
                cases = [c for c in measured_all if c["user"] == user]
                if not taught and not cases:
                    continue
                engine, field_of = user_engine(Path(tmp) / f"{user}-{fold}.db", profiles[user], settings, runtime,
                                               model, LEARNED_FROM.get(user, "mara"))
                runtime = engine.runtime

                def run_pass(name: str, items: list[dict], teach: bool = False) -> None:
                    nonlocal learned
                    for case in items:
                        v, result = judged(engine, case, settings, field_of, user, alternative=False,
                                           verbose=verbose, tag=f"[{name}] ")
                        passes[name].append(v)
                        if teach:
                            learned += react(engine, case, result, field_of, profiles[user])

                run_pass(f"{measured}, before", cases)
                run_pass("taught, written with learning", taught, teach=True)
                run_pass("taught, next time", taught)
                run_pass(f"{measured}, after", cases)
                engine.store.close()
        if runtime is not None:
            runtime.close()
    print(f"(places learned: {learned})")
    return {name: summarise(verdicts) for name, verdicts in passes.items()}


def pct(a: int, b: int) -> str:
    """ "a/b (p%)", as every table here prints a count."""
    return f"{a}/{b} ({100 * a / max(b, 1):.0f}%)"


def feedback_report(summaries: dict[str, dict]) -> str:
    rows = [[name, pct(s["right"], s["positives"]), str(s["wrong_field"]),
             pct(s["third_party_inserted"], s["third_party"]), pct(s["neutral_inserted"], s["neutral"]),
             str(s["invented"])] for name, s in summaries.items()]
    return table(["pass", "right value inserted", "wrong field", "someone else's", "neutral", "invented"], rows)


def report(split: str, s: dict) -> str:
    rows = [["right value inserted (positives)", pct(s["right"], s["positives"])],
            ["wrong field inserted (positives)", pct(s["wrong_field"], s["positives"])],
            ["user's value where someone else's goes", pct(s["third_party_inserted"], s["third_party"])],
            ["neutral openings with a value inserted", pct(s["neutral_inserted"], s["neutral"])],
            ["suggestions with an invented detail", str(s["invented"])],
            ["right value shown or one Alt+] away (positives)", pct(s["right"] + s["alt_right"], s["positives"])],
            ["another field one Alt+] away (positives)", pct(s["alt_wrong"], s["positives"])],
            ["user's value one Alt+] away where someone else's goes", pct(s["alt_third_party"], s["third_party"])],
            ["neutral openings with a value one Alt+] away", pct(s["alt_neutral"], s["neutral"])]]
    fields = [[f, pct(r, n)] for f, (r, n) in s["per_field"].items()]
    return (f"### {split}\n\n" + table(["measure", split], rows) + "\n\n"
            + table(["field", "right value inserted"], fields) + "\n")


ABLATIONS = {
    "shipped": {},
    "no slot classifier (retrieval path only)": {"classifier": False},
    "no writer probe": {"OWNER_MIN": -99.0},
    "no person cue (the probe alone)": {"person_cue": lambda text: None},
    "neither (anyone's detail is the user's)": {"OWNER_MIN": -99.0, "person_cue": lambda text: None},
    "no lead-in limit": {"LEAD_IN_WORDS": 99},
}


def ablate(split: str = "dev") -> str:
    """The dev split with each gate of core/placement.py and the slot classifier switched off in turn."""
    import chunkwise.core.engine as engine_module
    import chunkwise.core.placement as placement
    import chunkwise.core.whose as whose

    module = {"OWNER_MIN": whose, "LEAD_IN_WORDS": placement, "person_cue": whose}
    saved = {k: getattr(m, k) for k, m in module.items()}
    real = engine_module.Engine._slot_classifier
    rows = []
    for name, change in ABLATIONS.items():
        for key, value in change.items():
            if key == "classifier":
                engine_module.Engine._slot_classifier = lambda self, stats, progress: None
            else:
                setattr(module[key], key, value)
        try:
            s, _ = evaluate(split, learned=False)
        finally:
            engine_module.Engine._slot_classifier = real
            for key, value in saved.items():
                setattr(module[key], key, value)
        rows.append([name, f"{s['right']}/{s['positives']}", f"{s['wrong_field']}", f"{s['third_party_inserted']}/{s['third_party']}",
                     f"{s['neutral_inserted']}/{s['neutral']}", str(s["invented"])])
        print(rows[-1], flush=True)
    return table(["variant (profile only, no learned store)", "right value", "wrong field", "third party",
                  "neutral", "invented"], rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--split", choices=("dev", "test", "all", "both"), default="both")
    ap.add_argument("--data", default="personal", choices=("personal", "fields"),
                    help="the case set: bench/data/personal (default) or bench/data/fields (field types "
                         "the other sets never store: postcode, date of birth, booking reference, tax ID...)")
    ap.add_argument("--threshold", type=float, default=None)
    ap.add_argument("--cases", type=int, default=None, help="only the first N cases of each split")
    ap.add_argument("--no-learned", action="store_true", help="the profile alone, no learned store")
    ap.add_argument("--ready", type=float, default=READY_THRESHOLD,
                    help="the detail alternative's threshold (default: the editor's, %(default)s)")
    ap.add_argument("--model", default=None, help="a GGUF file or 'gemma' (the optional extra) instead of the bundled model")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--ablate", action="store_true", help="dev split, each gate switched off in turn")
    ap.add_argument("--feedback", nargs="?", const="test", choices=("test", "dev"),
                    help="cases measured before and after others are written with learning while writing: "
                         "test (the dev cases taught) or dev (two folds of dev, for diagnosis)")
    args = ap.parse_args()
    global READY, DATA
    READY = args.ready
    DATA = ROOT / "bench" / "data" / args.data
    print(f"Machine: {machine()}\n")
    OUT.mkdir(exist_ok=True)
    if args.ablate:
        print(ablate())
        return
    if args.feedback:
        print(feedback_report(evaluate_feedback(args.feedback, args.verbose, args.threshold, args.model)))
        return
    splits = ("dev", "test") if args.split == "both" else (args.split,)
    for split in splits:
        summary, verdicts = evaluate(split, args.threshold, args.cases, not args.no_learned, args.verbose,
                                     args.model)
        print(report(split, summary))
        suffix = ("" if args.data == "personal" else f"-{args.data}") + (f"-{Path(args.model).stem}" if args.model else "")
        (OUT / f"personal-{split}{suffix}.json").write_text(json.dumps({"summary": summary, "cases": verdicts}, indent=1))
        kinds = Counter((v["kind"], v.get("inserted")) for v in verdicts if v.get("inserted"))
        print("insertions by (case kind, field):", dict(kinds), "\n")


if __name__ == "__main__":
    main()
