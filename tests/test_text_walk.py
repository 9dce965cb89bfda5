"""Reading a text position by position for the matcher (core/perplexity.py: text_positions), the one
walk under CD-LM perplexity and the settings plot; and tuning asking what the editor asks."""
from dataclasses import replace
from types import SimpleNamespace

import numpy as np

from chunkwise.core.encoding import local_mean
from chunkwise.core.perplexity import text_positions
from chunkwise.core.settings import Settings


def test_each_position_is_the_text_so_far_and_the_state_after_it(runtime):
    text = "Café ☕ at 9:30 — see you there"
    tokens = runtime.tokenize(text)
    runtime.reset()
    out = runtime.eval(tokens, outputs="all")                       # logits (n, V), hidden (n, d)
    choices = np.argmax(out.logits, axis=1)
    for first, prefix in ((0, ""), (2, "Re: ")):
        seen = list(text_positions(runtime, tokens, out.hidden, choices, range(first, len(tokens)), first, prefix))
        assert [p.at for p in seen] == list(range(first, len(tokens)))
        for p in seen:
            written = b"".join(runtime.piece(t) for t in tokens[first:p.at + 1])
            assert p.text == prefix + written.decode("utf-8", errors="ignore")   # an unfinished character waits
            assert p.last_token == tokens[p.at] and p.model_choice == choices[p.at]
            np.testing.assert_array_equal(p.hidden, out.hidden[p.at])
            np.testing.assert_array_equal(p.local, local_mean(out.hidden, p.at, first=first))
        assert seen[-1].text == prefix + b"".join(runtime.piece(t) for t in tokens[first:]).decode()
    runtime.reset()


def test_tuning_asks_what_the_editor_asks(monkeypatch):
    """The request is Settings.suggestion_request's (whatever it becomes), cut to 6 tokens on purpose."""
    from chunkwise.core import tuning

    sent = []
    engine = SimpleNamespace(generate=lambda request, record_use=True: sent.append(request) or SimpleNamespace(spans=[]))
    editors = Settings.suggestion_request
    monkeypatch.setattr(Settings, "suggestion_request",                  # the editor's request changes
                        lambda self, prompt, stop=("\n\n",), lifted=False:
                        replace(editors(self, prompt, stop, lifted=lifted), top_k=7))
    assert tuning._first_value(engine, "Call me at", {1}) is None
    (request,) = sent
    assert request.top_k == 7 and request.max_tokens == 6 and request.stop == ["\n\n"]
    # each place follows a finished word (the space before the user's value was taken off): no token healing
    assert request == Settings(max_tokens=6).suggestion_request("Call me at", lifted=True)
