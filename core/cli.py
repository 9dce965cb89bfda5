"""Command line: ``python -m chunkwise.core`` (installed as ``chunkwise``).

    chunkwise generate "Thanks for your call. You can reach me at"
    chunkwise generate --chat "Write a short email asking for a day off" --json
    chunkwise chunks add --kind pii --label phone --text "(555) 123-4567" \\
        --context "You can call me at" --context "My phone number is"
    chunkwise chunks list | import FILE | export FILE | remove ID | encode
    chunkwise mine --corpus ~/Mail/sent.mbox [--knn]    (see cli_learn.py: mine, ppl, tune)

Bad input gets one clear line on stderr and a non-zero exit, never a
traceback (``--debug`` shows one).
"""
from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from pathlib import Path

from .details import shape_name
from .errors import ChunkwiseError
from .store import KINDS

EXIT_ERROR = 1
EXIT_USAGE = 2


class _Progress:
    """A ``progress(done, total)`` callback drawn as a tqdm bar on stderr.

    Only on a terminal (tqdm's ``disable=None``): piped or captured stderr gets
    no progress at all, so scripts see only results and clear error lines.
    """

    _open: set = set()        # bars still drawn, closed before an error line is printed

    def __init__(self, label: str, quiet: bool = False):
        self.label, self.quiet = label, quiet
        self._bar = None

    def __call__(self, done: int, total: int) -> None:
        if self.quiet or total <= 0:
            return
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=self.label, file=sys.stderr, disable=None, mininterval=0.2,
                             dynamic_ncols=True)
            _Progress._open.add(self._bar)
        if self._bar.total != total:
            self._bar.total = total
        self._bar.update(done - self._bar.n)
        if done >= total:
            _Progress._open.discard(self._bar)
            self._bar.close()
            self._bar = None

    @classmethod
    def close_all(cls) -> None:
        """End any bar left open (an error or Ctrl+C mid-way), so messages start on a line of their own."""
        for bar in list(cls._open):
            bar.close()
        cls._open.clear()


def _common(parser: argparse.ArgumentParser, top: bool = False) -> None:
    default = None if top else argparse.SUPPRESS
    parser.add_argument("--db", metavar="PATH", default=default,
                        help="chunk store (default: $CHUNKWISE_DB or the user data directory)")
    parser.add_argument("--model", metavar="PATH", default=default,
                        help="GGUF model (default: $CHUNKWISE_MODEL or the bundled SmolLM2-135M-Instruct)")
    parser.add_argument("--debug", action="store_true", default=False if top else argparse.SUPPRESS,
                        help="show tracebacks and llama.cpp's log")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="chunkwise", description="Chunkwise: private autocomplete with your own chunks (CD-LM).")
    _common(parser, top=True)
    parser.set_defaults(func=partial(_usage, parser))
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    g = sub.add_parser("generate", help="continue a prompt (or follow an instruction with --chat)")
    _common(g)
    g.set_defaults(func=cmd_generate)
    g.add_argument("prompt", help="the text to continue; '-' reads standard input")
    g.add_argument("--chat", action="store_true", help="treat PROMPT as an instruction, through the chat template")
    g.add_argument("--system", help="system message for --chat")
    g.add_argument("--max-tokens", type=int, default=64, metavar="N")
    g.add_argument("--threshold", type=float, metavar="T",
                   help="chunk similarity threshold on the calibrated 0..1 scale (lower inserts more readily)")
    g.add_argument("--no-chunks", action="store_true", help="plain decoding, no chunk insertion")
    g.add_argument("--sample-acceptance", action="store_true",
                   help="accept chunks with probability q (the paper's z ~ Bernoulli(q)) instead of q >= 0.5")
    g.add_argument("--draft", action="store_true",
                   help="check n-gram and weak-chunk drafts in one batch: the same text, faster where the reply "
                        "repeats earlier text (docs/benchmarks.md)")
    g.add_argument("--anchor-reduction", action="store_true",
                   help="drop earlier sentences from the KV cache at sentence ends (costs quality; saves no memory)")
    g.add_argument("--knn", action="store_true",
                   help="mix in the kNN-LM of your mined writing (chunkwise mine --knn); PP-KD with teacher data")
    from .cli_learn import add_knn_options

    add_knn_options(g)
    g.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default)")
    g.add_argument("--top-p", type=float, default=0.95)
    g.add_argument("--top-k", type=int, default=40)
    g.add_argument("--seed", type=int)
    g.add_argument("--stop", action="append", default=[], metavar="TEXT", help="stop sequence (repeatable)")
    g.add_argument("--ctx", type=int, default=2048, metavar="N", help="context window in tokens")
    g.add_argument("--threads", type=int, metavar="N")
    g.add_argument("--json", action="store_true", help="print one JSON object: text, spans, stats")

    c = sub.add_parser("chunks", help="manage the chunk store")
    _common(c)
    c.set_defaults(func=_chunks_without_action)
    csub = c.add_subparsers(dest="action", metavar="ACTION")
    a = csub.add_parser("add", help="add a chunk with its trigger contexts")
    _common(a)
    a.set_defaults(func=cmd_chunks_add)
    a.add_argument("--kind", required=True, choices=KINDS)
    a.add_argument("--text", required=True)
    a.add_argument("--label")
    a.add_argument("--context", action="append", required=True, metavar="CTX",
                   help="text that leads into the chunk (repeatable)")
    ls = csub.add_parser("list", help="list chunks (PII masked unless --reveal)")
    _common(ls)
    ls.set_defaults(func=cmd_chunks_list)
    ls.add_argument("--json", action="store_true")
    ls.add_argument("--kind")
    ls.add_argument("--reveal", action="store_true", help="show PII values in the table")
    rm = csub.add_parser("remove", help="delete a chunk")
    _common(rm)
    rm.set_defaults(func=cmd_chunks_remove)
    rm.add_argument("id", type=int)
    im = csub.add_parser("import", help="import chunks from a .json or .csv file (all or nothing)")
    _common(im)
    im.set_defaults(func=cmd_chunks_import)
    im.add_argument("file")
    ex = csub.add_parser("export", help="export chunks to a .json or .csv file")
    _common(ex)
    ex.set_defaults(func=cmd_chunks_export)
    ex.add_argument("file")
    ex.add_argument("--kind")
    ex.add_argument("--include-pii", action="store_true",
                    help="write real PII values (masked otherwise); the file is created owner-only")
    enc = csub.add_parser("encode", help="compute matching data for the model now (otherwise done on demand)")
    _common(enc)
    enc.set_defaults(func=cmd_chunks_encode)
    from .cli_learn import add_parsers

    add_parsers(sub, _common, engine_factory=_engine, progress_factory=_Progress)
    return parser


def _open_store(args):
    from .paths import default_db_path
    from .store import ChunkStore

    return ChunkStore(Path(args.db).expanduser() if args.db else default_db_path())


def _engine(args, with_store: bool = True):
    from .engine import Engine
    from .store import ChunkStore

    store = _open_store(args) if with_store else ChunkStore(":memory:")
    quiet = getattr(args, "json", False) and not sys.stderr.isatty()
    engine = Engine(args.model, store, n_ctx=getattr(args, "ctx", 2048), n_threads=getattr(args, "threads", None),
                    verbose=args.debug, progress=_Progress("Measuring the model on ordinary text", quiet))
    if with_store and engine.store.count()[0] > 0:
        engine.refresh(progress=_Progress("Encoding chunk contexts", quiet))
    return engine


def generation_request(args, prompt: str):
    """The request ``chunkwise generate`` sends for *prompt* with these arguments (bench/cli_profile.py
    sends the same).

    >>> generation_request(build_parser().parse_args(["generate", "Call me at", "--max-tokens", "24"]), "Call me at").max_tokens
    24
    """
    from .engine import GenerationRequest

    return GenerationRequest(prompt, mode="chat" if args.chat else "complete", max_tokens=args.max_tokens,
                             temperature=args.temperature, top_p=args.top_p, top_k=args.top_k, seed=args.seed,
                             stop=args.stop, use_chunks=not args.no_chunks,
                             sample_acceptance=args.sample_acceptance, system=args.system, draft=args.draft,
                             anchor_reduction=args.anchor_reduction, knn=args.knn)


def cmd_generate(args) -> int:
    prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
    from .engine import check_threshold

    if args.max_tokens < 1:
        raise ChunkwiseError("--max-tokens must be at least 1.")
    if args.threshold is not None:
        check_threshold(args.threshold)
    from .cli_learn import knn_settings

    knn = knn_settings(args)
    engine = _engine(args, with_store=not args.no_chunks or args.knn)
    engine.knn_settings = knn
    if args.threshold is not None:
        engine.threshold = args.threshold
    request = generation_request(args, prompt)
    if args.draft and engine.runtime.batch_profile().exact < 2:
        print("chunkwise: note: this llama.cpp build computes batches differently from one token at a time, "
              "so drafting stays off to keep the output exact; reinstall llama-cpp-python with "
              'CMAKE_ARGS="-DGGML_LLAMAFILE=OFF" for bit-exact batches (see README).', file=sys.stderr)
    generation = engine.stream(request)
    for notice in generation.notices:
        print(f"chunkwise: note: {notice}", file=sys.stderr)
    if args.json:
        completion = generation.completion()
        data = completion.as_dict()
        # Deprecated alias, for one release (0.1.x): stats "kv_cells" is now "kv_tokens_kept" (it
        # counts the tokens the cache keeps, not llama.cpp's cells).  Remove in the release after.
        data["stats"]["kv_cells"] = data["stats"]["kv_tokens_kept"]
        print(json.dumps(data, ensure_ascii=False))
    else:
        for piece in generation:
            sys.stdout.write(piece.text)
            sys.stdout.flush()
        completion = generation.completion()
        sys.stdout.write("\n")
        s = completion.stats
        print(f"[{s.tokens} tokens in {s.seconds:.2f}s, {s.forward_passes} forward passes, "
              f"{s.chunks} chunk(s) = {s.chunk_tokens} tokens]", file=sys.stderr)
        if s.withheld:
            name = shape_name(s.withheld)
            article = "an" if name[0].lower() in "aeiou" else "a"
            print(f"chunkwise: note: stopped before {article} {name} the model would have made up; your own "
                  "come from the chunk store (chunkwise chunks add --kind pii ...).", file=sys.stderr)
    for chunk_id in {sp.chunk_id for sp in completion.spans}:
        engine.store.record_use(chunk_id)
    return 0


def _usage(parser: argparse.ArgumentParser, args) -> int:
    """``chunkwise`` with no command: the help, and the usage exit code."""
    parser.print_help()
    return EXIT_USAGE


def _chunks_without_action(args) -> int:
    raise ChunkwiseError("chunks needs an action: add, list, remove, import, export or encode.")


def cmd_chunks_encode(args) -> int:
    engine = _engine(args)
    print(f"{len(engine.matcher)} contexts ready for {engine.runtime.name} (index {engine.index_status}).")
    return 0


def cmd_chunks_add(args) -> int:
    with _open_store(args) as store:
        cid = store.add_chunk(args.text, args.kind, args.context, label=args.label)
    print(f"added chunk {cid} ({args.kind}, {len(args.context)} context(s))")
    return 0


def cmd_chunks_list(args) -> int:
    with _open_store(args) as store:
        chunks = store.list_chunks(kind=args.kind)
        encryption = store.encryption
    if args.json:
        rows = []
        for c in chunks:
            record = {**c.as_record(), "text": c.shown(args.reveal)}
            rows.append({"id": c.id, **record, "use_count": c.use_count, "created_at": c.created_at,
                         "updated_at": c.updated_at})
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return 0
    if not chunks:
        print("The chunk store is empty. Add one with: chunkwise chunks add --kind pii --text ... --context ...")
    print(f"Personal information in this store: {encryption}.", file=sys.stderr)
    for c in chunks:
        shown = c.shown(args.reveal).replace("\n", "⏎")
        if len(shown) > 60:
            shown = shown[:59] + "…"
        print(f"{c.id:>5}  {c.kind:<8} {(c.label or '-'):<12} {shown:<60}  "
              f"{len(c.contexts)} ctx  used {c.use_count}x")
    return 0


def cmd_chunks_remove(args) -> int:
    with _open_store(args) as store:
        store.remove_chunk(args.id)
    print(f"removed chunk {args.id}")
    return 0


def cmd_chunks_import(args) -> int:
    from .portable import import_file

    with _open_store(args) as store:
        ids = import_file(store, args.file)
    print(f"imported {len(ids)} chunk(s) from {args.file}")
    return 0


def cmd_chunks_export(args) -> int:
    from .portable import export_file

    with _open_store(args) as store:
        n = export_file(store, args.file, kind=args.kind, include_pii=args.include_pii)
        masked = sum(1 for c in store.list_chunks(kind=args.kind) if c.kind == "pii") if not args.include_pii else 0
    print(f"exported {n} chunk(s) to {args.file}"
          + (f" ({masked} PII value(s) masked; add --include-pii to write them)" if masked else ""))
    return 0


def _ask_passphrase(new: bool) -> str | None:
    """On a terminal, ask for the store's passphrase (twice for a new store)."""
    if not sys.stdin.isatty():
        return None
    import getpass

    from . import crypto

    def differ() -> bool:
        raise ChunkwiseError(f"{crypto.DIFFERENT} Nothing was changed.")

    return crypto.choose_passphrase(lambda prompt: getpass.getpass(prompt + " "), new, differ)


def main(argv: list[str] | None = None) -> int:
    from . import crypto

    crypto.set_prompt(_ask_passphrase)
    args = build_parser().parse_args(argv)
    try:
        try:
            return args.func(args)
        finally:
            _Progress.close_all()
    except ChunkwiseError as exc:
        print(f"chunkwise: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("chunkwise: interrupted; nothing half-written was kept.", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # the last line of defence: no traceback for users
        if args.debug:
            raise
        # The type and the place only: an exception's message may quote the user's text.
        print(f"chunkwise: internal error: {type(exc).__name__} at {_where(exc)} (run with --debug for details)",
              file=sys.stderr)
        return EXIT_ERROR


def _where(exc: BaseException) -> str:
    """The innermost frame of the exception, as ``module.py:line``."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return "?" if tb is None else f"{Path(tb.tb_frame.f_code.co_filename).name}:{tb.tb_lineno}"


if __name__ == "__main__":
    sys.exit(main())
