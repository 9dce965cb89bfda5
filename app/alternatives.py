"""Several suggestions at one place: Alt+] and Alt+[ cycle them, as Copilot and VS Code do.

Once the best suggestion has arrived, the lane that serves suggestions works out up to
ALTERNATIVES more, one after another.  The first asks the same request more readily
(``GenerationRequest.readier``: the similarity threshold at READY_THRESHOLD) and is kept only where
it brings one of the user's library entries the suggestion does not (``detail_offered``): a detail
the slot classifier reads too weakly to insert unasked ("Ship to:" -> the address) is then one
Alt+] away, and the status bar names it ("1/2 · Alt+] Address").  The others each start with the
model's next likeliest token (``GenerationRequest.first_rank``); where the best suggestion is one
of the user's library entries, the first of them is therefore the model's own text.  Typing,
moving the cursor or taking a suggestion cancels them, as it cancels the suggestion itself.
The status bar shows "2/3" while there is more than one.

>>> alts = Alternatives()
>>> alts.start("body@7", [Piece(" a")])
>>> alts.add([Piece(" b")]), alts.add([Piece(" a")]), alts.add([Piece(" ")]), alts.label()
(True, False, False, '1/2')
>>> alts.step(1)[0].text, alts.label(), alts.step(1)[0].text
(' b', '2/2', ' a')
>>> alts.add_detail([Piece(" +49 151", "chunk", 7, "pii", "phone")]), alts.label(), alts.step(1)[0].text
(True, '1/3 · Alt+] phone', ' +49 151')
"""
from __future__ import annotations

from chunkwise.core import Piece, detail_offered

ALTERNATIVES = 2      # beside the best suggestion
MAX_RANK = 4          # first tokens tried at most (an empty or repeated alternative is skipped)


def trim_start(text: str, lifted_space: bool, line_start: bool) -> str:
    """The start of a suggestion as the editor shows it: without the space the prompt already lifted
    (app/window.py body_prompt), and without empty lines above a cursor that starts a line."""
    if lifted_space and text.startswith(" "):
        text = text[1:]
    return text.lstrip("\n") if line_start else text


class Alternatives:
    """The suggestions known for one place (editor and cursor position) and which one is shown."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.options: list[list[Piece]] = []
        self.index = 0
        self.place = None           # (editor, anchor) the options belong to
        self.next_rank = 0          # the first token rank the next alternative starts with
        self.request_id = -1        # the alternative being worked out, if any
        self.pending: list[Piece] = []
        self.detail_wanted = False  # the detail alternative is still to be asked for
        self.detail_id = -1         # the request that asks for it
        self.detail: Piece | None = None   # the library entry it brings, once kept

    def start(self, place, pieces: list[Piece], detail: bool = False) -> None:
        """New alternatives for *place*, whose suggestion is *pieces*; *detail*: ask for the detail alternative."""
        self.clear()
        self.place = place
        self.options = [list(pieces)]
        self.detail_wanted = detail

    @property
    def count(self) -> int:
        return len(self.options)

    def add(self, pieces: list[Piece]) -> bool:
        """Keep an alternative unless it is empty or says what one already known says."""
        text = "".join(p.text for p in pieces)
        if not text.strip() or any(text.rstrip() == "".join(p.text for p in o).rstrip() for o in self.options):
            return False
        self.options.append(list(pieces))
        return True

    def add_detail(self, pieces: list[Piece]) -> bool:
        """Keep the readier request's answer, right after the suggestion, where it brings a library entry
        the suggestion does not."""
        offered = detail_offered(pieces, self.options[0]) if self.options else None
        text = "".join(p.text for p in pieces)
        if offered is None or any(text.rstrip() == "".join(p.text for p in o).rstrip() for o in self.options):
            return False
        self.options.insert(1, list(pieces))
        if self.index >= 1:
            self.index += 1            # the option on screen keeps its place in the count
        self.detail = offered
        return True

    def wants_more(self) -> bool:
        return self.place is not None and (self.detail_wanted or (self.count < 1 + ALTERNATIVES
                                                                  and self.next_rank < MAX_RANK))

    def step(self, delta: int) -> list[Piece]:
        self.index = (self.index + delta) % self.count
        return self.options[self.index]

    def label(self) -> str:
        """ "2/3", and while the suggestion itself is shown, which of the user's details Alt+] brings."""
        if self.count < 2:
            return ""
        hint = f" · Alt+] {self.detail.label or 'your detail'}" if self.detail is not None and self.index == 0 else ""
        return f"{self.index + 1}/{self.count}{hint}"
