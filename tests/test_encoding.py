"""The local vector is defined once (core/encoding.py): the encoder, the decoder and the background
statistics all average the window local_mean does, whatever LOCAL_WINDOW is.

The window tests set LOCAL_WINDOW to other sizes on purpose: a caller that kept its own copy of the
window (a hard-coded 3, ``from .encoding import LOCAL_WINDOW``, ``rows[-3:]``) keeps averaging three
states and fails here, where with the shipped window it would agree by luck."""
import ast
from pathlib import Path

import numpy as np
import pytest

from chunkwise.core import encoding
from chunkwise.core.decoding import DecodeSettings, Decoder
from chunkwise.core.drafting import NGramDrafter
from chunkwise.core.encoding import Encoder, local_mean, local_means, local_rows
from chunkwise.core.store import PendingEncoding

ROOT = Path(__file__).resolve().parents[1]
WINDOWS = [1, 3, 5]
TOL = dict(rtol=1e-3, atol=1e-3)     # batched and one-token decodes round differently; windows differ by far more


@pytest.mark.parametrize("window", WINDOWS)
def test_running_sums_agree_with_local_mean(monkeypatch, window):
    """ModelStats keeps its running-sum form (the shipped statistics were measured with it)."""
    monkeypatch.setattr(encoding, "LOCAL_WINDOW", window)
    states = np.random.default_rng(window).normal(size=(12, 8)).astype(np.float32)
    fast = local_means(states, first=1)
    slow = np.stack([local_mean(states, end, first=1) for end in range(1 + window - 1, len(states))])
    assert fast.shape == slow.shape == (len(states) - window, 8)
    np.testing.assert_allclose(fast, slow, rtol=1e-5, atol=1e-6)


def test_local_rows_is_what_local_mean_reads():
    """Asking the runtime for local_rows(n) trailing rows gives local_mean all it needs."""
    states = np.arange(40.0).reshape(10, 4)
    for n in range(1, 11):
        for first in (0, 1):
            full = local_mean(states[:n], first=min(first, n - 1))
            tail = states[n - local_rows(n, first):n]
            np.testing.assert_array_equal(local_mean(tail), full)


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("context", ["Hi", "Call me", "Dear Mr. Patel, my phone number is"])
def test_encoder_stores_local_mean_of_the_context(runtime, monkeypatch, window, context):
    monkeypatch.setattr(encoding, "LOCAL_WINDOW", window)
    enc = Encoder(runtime).encode(PendingEncoding(1, 1, context, "(555) 123-4567", "h"))
    tokens, _ = Encoder(runtime).split(context, "(555) 123-4567")
    runtime.reset()
    states = runtime.eval(tokens, outputs="all").hidden                  # (n, d)
    expected = local_mean(states, first=1 if len(tokens) > 1 else 0)       # BOS out, unless alone
    np.testing.assert_allclose(enc.vector_local, expected, **TOL)
    np.testing.assert_allclose(enc.vector, states[-1], **TOL)


class _Recorder:
    """A matcher that proposes nothing and keeps what the decoder showed it at each step."""

    def __init__(self, runtime):
        self.rt, self.seen = runtime, []

    def __len__(self):
        return 1

    def propose(self, hidden, local, text, **_):
        self.seen.append((list(self.rt.tokens), np.array(local, copy=True)))
        return None

    def value_begun(self, text, exclude=()):
        return None                     # none of the user's values begun: the decoder goes on to propose

    def value_ahead(self, hidden, local, text):
        return None                     # no line only the user can write


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("draft", [False, True])
def test_decoder_local_vector_is_local_mean_of_its_states(runtime, monkeypatch, window, draft):
    """Prefill, one-token steps and verified drafts all keep the states the window needs."""
    monkeypatch.setattr(encoding, "LOCAL_WINDOW", window)
    recorder = _Recorder(runtime)
    prompt = "Hi Sam,\n\nThanks for the call. Thanks for the call. I will send the report on"
    runtime.reset()
    decoder = Decoder(runtime, recorder, DecodeSettings(max_tokens=12, draft=draft), drafter=NGramDrafter())
    list(decoder.run(runtime.tokenize(prompt), prompt))
    assert len(recorder.seen) > 3
    for tokens, local in recorder.seen:
        runtime.reset()
        states = runtime.eval(tokens, outputs="all").hidden
        np.testing.assert_allclose(local, local_mean(states), **TOL)
    runtime.reset()


def _hand_made_locals(path: Path) -> list[str]:
    """Calls of ``.mean``, ``np.mean`` or ``np.cumsum`` whose operand names hidden states, and
    direct reads of LOCAL_WINDOW (a window of one's own is one step from a hard-coded one)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, (ast.Name, ast.Attribute, ast.alias)) and "LOCAL_WINDOW" in (
                getattr(node, "id", None), getattr(node, "attr", None), getattr(node, "name", None)):
            found.append(f"{where}: LOCAL_WINDOW")
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        if node.func.attr == "mean" and not node.args:
            operand = node.func.value                               # x.mean(axis=0)
        elif node.func.attr in ("mean", "cumsum") and node.args:
            operand = node.args[0]                                  # np.mean(x, axis=0)
        else:
            continue
        if any(word in ast.unparse(operand) for word in ("hidden", "states", "recent")):
            found.append(f"{where}: {ast.unparse(node)}")
    return found


def test_no_local_vector_is_averaged_by_hand():
    """Outside core/encoding.py, hidden states are averaged only through local_mean & co.
    core/slots.py names the window in its classifier's source id, and nowhere else."""
    offenders = []
    for folder in ("core", "app", "bench", "tools"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path != ROOT / "core" / "encoding.py":
                offenders += _hand_made_locals(path)
    allowed = [f for f in offenders if f.startswith("core/slots.py") and f.endswith("LOCAL_WINDOW")]
    assert len(allowed) == 2                                        # the import, source_id()
    assert [f for f in offenders if f not in allowed] == []
