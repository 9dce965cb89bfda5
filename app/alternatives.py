"""Several suggestions at one place: Alt+] and Alt+[ cycle them, as Copilot and VS Code do.

Once the best suggestion has arrived, the lane that serves suggestions works out up to
ALTERNATIVES more, one after another, each starting with the model's next likeliest token
(``GenerationRequest.first_rank``).  Where the best suggestion is one of the user's library
entries, the first alternative is therefore the model's own text.  Typing, moving the cursor or
taking a suggestion cancels them, as it cancels the suggestion itself.  The status bar shows
"2/3" while there is more than one.

>>> alts = Alternatives()
>>> alts.start("body@7", [Piece(" a")])
>>> alts.add([Piece(" b")]), alts.add([Piece(" a")]), alts.add([Piece(" ")]), alts.label()
(True, False, False, '1/2')
>>> alts.step(1)[0].text, alts.label(), alts.step(1)[0].text
(' b', '2/2', ' a')
"""
from __future__ import annotations

from chunkwise.core import Piece

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

    def start(self, place, pieces: list[Piece]) -> None:
        self.clear()
        self.place = place
        self.options = [list(pieces)]

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

    def wants_more(self) -> bool:
        return self.place is not None and self.count < 1 + ALTERNATIVES and self.next_rank < MAX_RANK

    def step(self, delta: int) -> list[Piece]:
        self.index = (self.index + delta) % self.count
        return self.options[self.index]

    def label(self) -> str:
        return f"{self.index + 1}/{self.count}" if self.count > 1 else ""
