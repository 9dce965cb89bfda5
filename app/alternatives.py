"""Several suggestions at one place: Alt+] and Alt+[ cycle them, as Copilot and VS Code do.

Once the best suggestion has arrived, the lane that serves suggestions works out up to
ALTERNATIVES more, one after another.  The first asks the same request more readily
(``GenerationRequest.readier``: the similarity threshold at READY_THRESHOLD; where the suggestion
brings a library entry, another value of its field instead) and is kept only where it brings one of
the user's library entries the suggestion does not (``detail_offered``): the other of two emails; a detail
the slot classifier reads too weakly to insert unasked ("Ship to:" -> the address), or only a little
ahead of another of the user's fields ("You can reach me at": the phone, the email close behind;
matching.rival_ratio), is then one Alt+] away, and the status bar names it ("1/2 · Alt+] Address").  The others each start with the
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
>>> alts.add_ready([Piece(" +49 151", "chunk", 7, "pii", "phone")]), alts.label(), alts.step(1)[0].text
(True, '1/3 · Alt+] phone', ' +49 151')
"""
from __future__ import annotations

from chunkwise.core import Piece
from chunkwise.core.engine import detail_offered

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
        self.figures: list[dict] = []   # each option's stats (tokens, speed, insertions), as its request ended
        self.index = 0
        self.place = None           # (editor, anchor) the options belong to
        self.next_rank = 0          # the first token rank the next model alternative starts with
        self.model_alternatives = True   # whether to ask for the model's next likeliest starts at all
        self.request_id = -1        # the alternative being worked out, if any
        self.pending: list[Piece] = []
        self.ready_request = None   # the readier request still to be asked (GenerationRequest.readier)
        self.ready_id = -1          # the request id that asked it
        self.offered: Piece | None = None   # the library entry its answer brings, once kept
        self.ready_option: list[Piece] | None = None   # that answer, as kept in options

    def start(self, place, pieces: list[Piece], ready_request=None, model_alternatives: bool = True,
              figures: dict | None = None) -> None:
        """New alternatives for *place*, whose suggestion is *pieces* (its stats: *figures*); *ready_request*:
        the readier request to ask first (None: none); *model_alternatives*: whether to ask the model for
        other starts too."""
        self.clear()
        self.place = place
        self.options = [list(pieces)]
        self.figures = [dict(figures or {})]
        self.ready_request = ready_request
        self.model_alternatives = model_alternatives

    @property
    def count(self) -> int:
        return len(self.options)

    def _known(self, text: str) -> bool:
        """Whether *text* is empty or says what an option already known says."""
        return not text.strip() or any(text.rstrip() == "".join(p.text for p in o).rstrip() for o in self.options)

    def add(self, pieces: list[Piece], figures: dict | None = None) -> bool:
        """Keep a model alternative unless it is empty or says what one already known says."""
        if self._known("".join(p.text for p in pieces)):
            return False
        self.options.append(list(pieces))
        self.figures.append(dict(figures or {}))
        return True

    def add_ready(self, pieces: list[Piece], figures: dict | None = None) -> bool:
        """Keep the readier request's answer, right after the suggestion, where it brings a library entry
        the suggestion does not (the first alternative, Alt+] once)."""
        offered = detail_offered(pieces, self.options[0]) if self.options else None
        if offered is None or self._known("".join(p.text for p in pieces)):
            return False
        self.ready_option = list(pieces)
        self.options.insert(1, self.ready_option)      # asked first: nothing else is there yet to shift
        self.figures.insert(1, dict(figures or {}))
        self.offered = offered
        return True

    def shows_ready(self) -> bool:
        """Whether the option on screen is the readier request's (the user chose it with Alt+])."""
        return self.ready_option is not None and self.options[self.index] is self.ready_option

    def wants_more(self) -> bool:
        return self.place is not None and (self.ready_request is not None or (
            self.model_alternatives and self.count < 1 + ALTERNATIVES and self.next_rank < MAX_RANK))

    def step(self, delta: int) -> list[Piece]:
        self.index = (self.index + delta) % self.count
        return self.options[self.index]

    @property
    def shown_figures(self) -> dict:
        """The stats of the option on screen ({} where none were kept)."""
        return self.figures[self.index] if self.index < len(self.figures) else {}

    def label(self) -> str:
        """ "2/3", and while the suggestion itself is shown, which of the user's entries Alt+] brings."""
        if self.count < 2:
            return ""
        hint = f" · Alt+] {self.offered.label or 'your entry'}" if self.offered is not None and self.index == 0 else ""
        return f"{self.index + 1}/{self.count}{hint}"
