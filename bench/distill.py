"""Learning from the user's writing, measured (CD-LM paper Table 11 / Figure 4 shape).

Part 1, SCD-LM.  The model answers the 'mine' prompts of bench/data/email_prompts.json
(several sampled answers each: the paper's self-memory); the answers are mined at gamma.
Then the 'test' prompts -- paraphrases never mined -- are answered greedily, plain and
with the self store at a sweep of thresholds, runs alternating side by side.  Reported:
forward passes saved (FPS) and time per token saved (TTS) against plain, ROUGE-L of the
text against plain greedy output, and the text's perplexity under the base model.

Part 2, KCD-LM and kNN-LM.  One person's emails (bench/data/user_emails), split three ways:
the first 15 train-* emails are mined, the last 3 are the validation set the threshold and the
kNN lambda are tuned on, and the 5 held_out-* emails are the test set reported.  Chunk stores
are mined three ways -- self (the model's own gamma rule), a teacher GGUF, and the corpus itself
as teacher (kNN-LM of the other emails, leave one out) -- with a kNN-LM datastore; perplexity of
the test emails under the base model, CD-LM at the editor's default threshold and at the one
tuned on validation, the kNN-LM at the editor's defaults and at the tuned lambda, and PP-KD (the
teacher's stored top-8 probabilities).  How much of the test text the training text already
holds (words inside a shared 5-gram) is printed with it.  The teacher GGUF is Gemma 3 270M (the
optional extra, another tokenizer: byte-offset alignment for real) where it is installed, else a
second instance of the student (which shows the path, not what a stronger teacher adds).

    python bench/distill.py [--samples 2] [--max-tokens 128] [--repeats 2] [--gamma 0.9] [--skip-self]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import MODELS, machine, save_plot, table  # noqa: E402
from chunkwise.core import Engine, GenerationRequest  # noqa: E402
from chunkwise.core.corpus import Document  # noqa: E402
from chunkwise.core.distill import generate_corpus  # noqa: E402
from chunkwise.core.scoring import document_tokens, score  # noqa: E402
from chunkwise.core.corpus import read_corpus  # noqa: E402
from chunkwise.core.learning import load_teacher, mine  # noqa: E402
from chunkwise.core.perplexity import perplexity_of  # noqa: E402
from chunkwise.core.tuning import tune_threshold  # noqa: E402
from chunkwise.core.knn import KnnSettings  # noqa: E402
from chunkwise.core.perplexity import base_log_prob, perplexity  # noqa: E402
from chunkwise.core.settings import Settings  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
THRESHOLDS = [0.7, 0.5, 0.3, 0.15, 0.05]
THRESHOLD_GRID = [0.0, 0.1, 0.2, 0.3, 0.5, 0.7]     # includes the editor's default
LAMBDA_GRID = [0.3, 0.5, 0.7, 0.9]
VALIDATION = 3                                      # the last training emails, held back to tune on


def rouge_l(candidate: str, reference: str) -> float:
    """ROUGE-L F1 over words (longest common subsequence)."""
    a, b = candidate.split(), reference.split()
    if not a or not b:
        return float(a == b)
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    lcs = prev[-1]
    if lcs == 0:
        return 0.0
    p, r = lcs / len(a), lcs / len(b)
    return 2 * p * r / (p + r)


def answer_ppl(engine: Engine, prompt: str, answer: str) -> float:
    """Perplexity of *answer* under the base model, given the chat prompt."""
    rt = engine.runtime
    doc = Document("answer", answer, rt.chat_prompt([{"role": "user", "content": prompt}]))
    tokens, first = document_tokens(rt, doc)
    scored = score(rt, tokens, first, hidden=False)
    return perplexity(base_log_prob(scored.logprob, first), len(tokens) - first)


def run(engine: Engine, prompt: str, max_tokens: int, chunks: bool):
    engine.runtime.reset()      # equal cache state: neither side reuses the other's prompt KV
    out = engine.generate(GenerationRequest(prompt, mode="chat", max_tokens=max_tokens, use_chunks=chunks),
                          record_use=False)
    return out.text, out.stats


def self_distillation(engine: Engine, tasks, args) -> list[dict]:
    prompts = [p for t in tasks for p in t["mine"]]
    start = time.perf_counter()
    docs = generate_corpus(engine, prompts, samples=args.samples, max_tokens=args.max_tokens + 64,
                           temperature=0.7, seed=1)
    result = mine(engine, docs, gamma=args.gamma)
    print(f"Self store: {len(docs)} answers to {len(prompts)} prompts, {result.report.tokens} tokens -> "
          f"{len(result.report.chunks)} chunks, {result.new_contexts} contexts "
          f"(gamma {args.gamma}; {time.perf_counter() - start:.0f} s to write and mine)\n")
    tests = [p for t in tasks for p in t["test"]]
    rows = []
    plain = {}
    for threshold in THRESHOLDS:
        engine.threshold = threshold
        per = {"passes": [], "plain_passes": [], "tpt": [], "plain_tpt": [], "dpt": [], "plain_dpt": [],
               "rouge": [], "ppl": [],
               "chunks": 0, "tokens": 0}
        for prompt in tests:
            best, best_plain = None, None
            for r in range(args.repeats):                   # A B, B A, ...: noise and order hit both
                order = (False, True) if r % 2 == 0 else (True, False)
                runs = {chunks: run(engine, prompt, args.max_tokens, chunks=chunks) for chunks in order}
                (text_p, st_p), (text_c, st_c) = runs[False], runs[True]
                if best_plain is None or st_p.seconds < best_plain[1].seconds:
                    best_plain = (text_p, st_p)
                if best is None or st_c.seconds < best[1].seconds:
                    best = (text_c, st_c)
            text_p, st_p = best_plain
            text_c, st_c = best
            plain.setdefault(prompt, text_p)
            per["passes"].append(st_c.steps / max(1, st_c.tokens))
            per["plain_passes"].append(st_p.steps / max(1, st_p.tokens))
            per["tpt"].append(st_c.seconds / max(1, st_c.tokens))
            per["plain_tpt"].append(st_p.seconds / max(1, st_p.tokens))
            per["dpt"].append(st_c.decode_seconds / max(1, st_c.tokens))     # decode only
            per["plain_dpt"].append(st_p.decode_seconds / max(1, st_p.tokens))
            per["rouge"].append(rouge_l(text_c, plain[prompt]))
            per["ppl"].append(answer_ppl(engine, prompt, text_c))
            per["chunks"] += st_c.chunks
            per["tokens"] += st_c.tokens
        fps = 1 - sum(per["passes"]) / sum(per["plain_passes"])
        tts = 1 - sum(per["tpt"]) / sum(per["plain_tpt"])
        tts_decode = 1 - sum(per["dpt"]) / sum(per["plain_dpt"])
        rows.append({"threshold": threshold, "eta": round(engine.matcher.eta, 3), "fps": fps, "tts": tts,
                     "tts_decode": tts_decode,
                     "rouge": statistics.mean(per["rouge"]), "ppl": statistics.mean(per["ppl"]),
                     "chunks": per["chunks"], "tokens": per["tokens"]})
    base_ppl = statistics.mean(answer_ppl(engine, p, plain[p]) for p in tests)
    rows.insert(0, {"threshold": "plain", "eta": "-", "fps": 0.0, "tts": 0.0, "tts_decode": 0.0, "rouge": 1.0,
                    "ppl": base_ppl,
                    "chunks": 0, "tokens": 0})
    return rows


def covered_share(text: str, reference: str, n: int = 5) -> float:
    """Share of *text*'s words that lie inside a word n-gram also found in *reference*."""
    words, ref = text.split(), reference.split()
    grams = {tuple(ref[i:i + n]) for i in range(len(ref) - n + 1)}
    covered = [False] * len(words)
    for i in range(len(words) - n + 1):
        if tuple(words[i:i + n]) in grams:
            covered[i:i + n] = [True] * n
    return sum(covered) / max(1, len(words))


def joined(docs) -> str:
    return "\n\n".join(d.text for d in docs)


def splits() -> tuple[list, str, str]:
    """One person's emails: 15 mined, 3 to tune on (validation), 5 to report (test)."""
    folder = ROOT / "bench" / "data" / "user_emails"
    mined = sorted(folder.glob("train-*.txt"))
    train, validation = read_corpus(mined[:-VALIDATION]), read_corpus(mined[-VALIDATION:])
    test = read_corpus(sorted(folder.glob("held_out-*.txt")))
    return train, joined(validation), joined(test)


def teacher_and_knn(args) -> dict:
    """Stores mined from one person's training emails three ways; threshold and kNN lambda tuned on
    the validation emails, perplexity reported on the test emails at the defaults and at the tuned values."""
    train, validation, test = splits()
    default = Settings().threshold
    out = {"train_docs": len(train),
           "overlap": {name: covered_share(text, joined(train))
                       for name, text in (("validation", validation), ("test", test))}}
    for name in ("self", "teacher GGUF", "corpus teacher"):
        engine = Engine(n_threads=2)
        teacher = load_teacher(args.teacher_path, n_threads=2) if name == "teacher GGUF" else None
        try:
            result = mine(engine, train, gamma=args.teacher_gamma, teacher=teacher, knn=True,
                          corpus_teacher=name == "corpus teacher")
        finally:
            if teacher is not None:
                teacher.close()
        tuned = tune_threshold(engine, validation, thresholds=THRESHOLD_GRID)
        on_test = {g["threshold"]: g["cdlm"] for g in tune_threshold(engine, test, thresholds=THRESHOLD_GRID).grid}
        row = {"chunks": len(result.report.chunks), "base": perplexity_of(engine, test).base,
               "tuned_threshold": tuned.threshold, "at_default": on_test[default],
               "at_tuned": on_test[tuned.threshold], "oracle": min(on_test.items(), key=lambda kv: kv[1])}
        if name == "teacher GGUF":       # its top-8 probabilities were stored: PP-KD against hard labels
            for mu in (1.0, 0.4):
                engine.knn_settings = replace(KnnSettings(), mu=mu)
                row[f"knn_mu{mu}"] = perplexity_of(engine, test, knn=True).knn
        if name == "corpus teacher":     # what Learn from my writing stores: the kNN-LM as the editor runs it
            lams = {}
            for lam in LAMBDA_GRID:
                engine.knn_settings = replace(KnnSettings(), lam=lam)
                lams[lam] = perplexity_of(engine, validation, knn=True).knn
            row["tuned_lam"] = min(lams, key=lams.get)
            for label, lam in (("knn_default", KnnSettings().lam), ("knn_tuned", row["tuned_lam"])):
                engine.knn_settings = replace(KnnSettings(), lam=lam)
                report = perplexity_of(engine, test, knn=True)
                row[label], row[label + "_cdlm"] = report.knn, report.cdlm_knn
            engine.knn_settings = replace(KnnSettings(), gate=None, lam=0.5)     # the paper's fixed lambda
            row["knn_fixed"] = perplexity_of(engine, test, knn=True).knn
        out[name] = row
        out["tokens"] = len(engine.runtime.tokenize(test))
        engine.close()
    return out


def teacher_path(choice: str | None) -> Path:
    """The teacher of part 2: *choice* ('gemma' or a path), else Gemma 3 270M where installed, else the student."""
    from chunkwise.core.errors import ModelError
    from chunkwise.core.models import gemma_path, model_alias
    from chunkwise.core.paths import bundled_model_path, resolve_model_path

    if choice and not model_alias(choice):
        return resolve_model_path(choice)
    try:
        return gemma_path(MODELS)        # assembled once, beside bench/models.py's files
    except ModelError:
        return bundled_model_path()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=2, help="alternating pairs per prompt; the fastest of each side")
    ap.add_argument("--gamma", type=float, default=0.9)
    ap.add_argument("--teacher-gamma", type=float, default=0.5)
    ap.add_argument("--skip-self", action="store_true", help="only part 2")
    ap.add_argument("--teacher", default=None,
                    help="the teacher GGUF of part 2: a path, or 'gemma' (the optional extra); default: "
                         "Gemma 3 270M if installed, else a second copy of the student")
    args = ap.parse_args()
    args.teacher_path = teacher_path(args.teacher)
    print(f"Teacher GGUF: {args.teacher_path.name}")
    print(f"Machine: {machine()}\n")
    tasks = json.loads((ROOT / "bench" / "data" / "email_prompts.json").read_text(encoding="utf-8"))["tasks"]

    engine = Engine(n_threads=2)
    rows = [] if args.skip_self else self_distillation(engine, tasks, args)
    if rows:
        print("SCD-LM on held-out paraphrased email prompts (greedy, max "
              f"{args.max_tokens} tokens; FPS/TTS against plain decoding in the same run):")
        print("(cache reset before every run; TTS counts the prompt's prefill, TTS decode does not)")
        print(table(["threshold", "eta", "FPS", "TTS", "TTS decode", "PPL (base LM)", "ROUGE-L vs plain",
                     "chunks / tokens"],
                    [[r["threshold"], r["eta"], f"{100 * r['fps']:.1f}%", f"{100 * r['tts']:.1f}%",
                      f"{100 * r['tts_decode']:.1f}%",
                      f"{r['ppl']:.2f}", f"{r['rouge']:.2f}",
                      f"{r['chunks']} / {r['tokens']}" if r["tokens"] else "-"] for r in rows]))
    engine.close()

    kd = teacher_and_knn(args)
    base = kd["self"]["base"]
    ov = kd["overlap"]
    print(f"\nPerplexity of the 5 test emails of one person (bench/data/user_emails/held_out-*, {kd['tokens']} "
          f"tokens); stores mined from {kd['train_docs']} training emails at gamma {args.teacher_gamma}; "
          f"threshold and kNN lambda tuned on {VALIDATION} validation emails (the last train-* files, not mined). "
          f"Words inside a 5-gram of the training text: test {100 * ov['test']:.0f}%, "
          f"validation {100 * ov['validation']:.0f}%.")
    change = lambda v: f"{100 * (v / base - 1):+.1f}%"
    lines = [["base model", "-", f"{base:.3f}", ""]]
    for name in ("self", "teacher GGUF", "corpus teacher"):
        row = kd[name]
        label = f"CD-LM, {name} store ({row['chunks']} chunks)"
        lines.append([f"{label}, editor default", f"{Settings().threshold:g}", f"{row['at_default']:.3f}",
                      change(row["at_default"])])
        lines.append([f"{label}, tuned on validation", f"{row['tuned_threshold']:g}", f"{row['at_tuned']:.3f}",
                      change(row["at_tuned"])])
        t, v = row["oracle"]
        lines.append([f"{label}, best on test (oracle, not a result)", f"{t:g}", f"{v:.3f}", change(v)])
    ct, tg = kd["corpus teacher"], kd["teacher GGUF"]
    k = KnnSettings()
    lines += [
        [f"kNN-LM, editor default (lambda {k.lam:g} gated at d {k.gate:g}, mu {k.mu:g}, T {k.temperature:g}, "
         f"k {k.k})", "-", f"{ct['knn_default']:.3f}", change(ct["knn_default"])],
        [f"kNN-LM, lambda tuned on validation ({ct['tuned_lam']:g}, gated)", "-", f"{ct['knn_tuned']:.3f}",
         change(ct["knn_tuned"])],
        ["kNN-LM, fixed lambda 0.5 (the paper's; no gate)", "-", f"{ct['knn_fixed']:.3f}", change(ct["knn_fixed"])],
        ["kNN-LM (editor default) + CD-LM corpus-teacher store", f"{Settings().threshold:g}",
         f"{ct['knn_default_cdlm']:.3f}", change(ct["knn_default_cdlm"])],
        ["teacher-GGUF kNN data: hard labels (mu 1)", "-", f"{tg['knn_mu1.0']:.3f}", change(tg["knn_mu1.0"])],
        ["teacher-GGUF kNN data: PP-KD, teacher top-8 (mu 0.4)", "-", f"{tg['knn_mu0.4']:.3f}",
         change(tg["knn_mu0.4"])],
    ]
    print(table(["model", "threshold", "perplexity", "vs base"], lines))
    # Chunk texts are not printed: benchmark output never carries chunk text (docs/benchmarks.md
    # quotes a few from this fictional corpus, written by hand).

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ["base model"] + [f"CD-LM\n{n}" for n in ("self store", "teacher GGUF", "corpus teacher")] + [
        "kNN-LM\n(default)", "PP-KD\nkNN-LM", "kNN-LM +\nCD-LM"]
    values = [base] + [kd[n]["at_tuned"] for n in ("self", "teacher GGUF", "corpus teacher")] + [
        ct["knn_default"], tg["knn_mu0.4"], ct["knn_default_cdlm"]]
    fig2, ax = plt.subplots(figsize=(9, 3.4))
    ax.bar(range(len(values)), values, color=["grey"] + ["tab:blue"] * 3 + ["tab:orange"] * 3)
    ax.set_xticks(range(len(values)), names, fontsize=8)
    ax.set_ylabel("perplexity (lower is better)")
    ax.set_title("Test emails of one person; stores from their training emails (threshold tuned on validation)")
    for i, v in enumerate(values):
        ax.text(i, v + 0.1, f"{v:.2f}", ha="center", fontsize=8)
    print(f"plot: {save_plot(fig2, 'distill_ppl.png')}")
    if not rows:
        return

    sweep = [r for r in rows if r["threshold"] != "plain"]
    xs = [r["threshold"] for r in sweep]
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    fig.subplots_adjust(wspace=0.38)
    axes[0].plot(xs, [100 * r["fps"] for r in sweep], "o-", label="FPS")
    axes[0].plot(xs, [100 * r["tts"] for r in sweep], "s-", label="TTS")
    axes[0].axhline(0, color="grey", lw=0.8)
    axes[0].set_ylabel("% saved vs plain")
    axes[0].legend()
    axes[1].plot(xs, [r["ppl"] for r in sweep], "o-")
    axes[1].axhline(rows[0]["ppl"], color="grey", ls="--", label="plain")
    axes[1].set_ylabel("PPL under base LM")
    axes[1].legend()
    axes[2].plot(xs, [r["rouge"] for r in sweep], "o-")
    axes[2].set_ylabel("ROUGE-L vs plain greedy")
    for ax in axes:
        ax.set_xlabel("threshold (calibrated; lower inserts more)")
        ax.invert_xaxis()
    fig.suptitle("SCD-LM with a self store, held-out paraphrased prompts")
    print(f"\nplot: {save_plot(fig, 'distill_scd.png')}")


if __name__ == "__main__":
    main()
