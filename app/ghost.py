"""A plain-text editor that shows a suggestion as ghost text after the cursor.

The suggestion is painted over the viewport, never written into the document,
so undo, the text and ``textChanged`` only ever see what the user typed or
accepted.  Text that came from a chunk is painted on a highlight, with the
chunk's label as a tooltip; accepted chunk text keeps a mark in the document
(a character property, shown as a tint while marks are on).

Keys, as in the tools people know:
  Tab         accept the whole suggestion
  Ctrl+Right  accept the next word (only with the cursor right before the ghost text)
  Esc         dismiss
  typing the suggestion's own next characters consumes them, without a new request
  any other key cancels the running suggestion

Each thing the user does says one thing to the window, once: ``edited`` when
the text changed (the window cancels the suggestion and re-arms its typing
pause), ``interrupted`` when the suggestion was dropped without a change (a
click, an arrow key, focus leaving, the cursor moved away), nothing when typed
characters consumed the ghost text.
"""
from __future__ import annotations

import re
from dataclasses import replace

from PySide6.QtCore import QEvent, QPointF, QRect, Qt, Signal
from PySide6.QtGui import (QAction, QColor, QFontMetricsF, QKeyEvent, QPainter, QPalette, QTextCharFormat, QTextCursor,
                           QTextFormat, QTextLayout)
from PySide6.QtWidgets import QPlainTextEdit, QToolTip

from chunkwise.core import Piece
from chunkwise.core.pieces import split_pieces

from .qtext import py_index, qt_len
from .theme import colours
from .words import kind_name

CHUNK_ID = QTextFormat.UserProperty + 1
CHUNK_LABEL = QTextFormat.UserProperty + 2
NOT_TYPED = QTextFormat.UserProperty + 3       # text that came from a suggestion, a paste or a restored autosave
_NEXT_WORD = re.compile(r"\s*\S+")


class GhostTextEdit(QPlainTextEdit):
    """QPlainTextEdit plus ghost text; emits what the user does with it."""

    accepted = Signal(list)        # the Pieces taken into the document
    dismissed = Signal()           # Esc: the pieces turned down are in last_dismissed
    interrupted = Signal()         # the suggestion was dropped and the text did not change: cancel generation
    tab_waiting = Signal()         # Tab with no suggestion on screen yet (a body never gets a tab character)
    edited = Signal()              # the user changed the text (not by accepting ghost text): cancel and re-arm
    typed_over = Signal(int, str)  # a character typed where the suggestion's next text was a chunk: its id, and
                                   # the text before it (the window leaves it out for the rest of the sentence)

    def __init__(self, parent=None, single_line: bool = False):
        self.last_dismissed: list[Piece] = []
        super().__init__(parent)
        self.single_line = single_line
        if single_line:
            self.setLineWrapMode(QPlainTextEdit.NoWrap)
            self.setVerticalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
            self.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
            self.setTabChangesFocus(True)
            height = int(QFontMetricsF(self.font()).lineSpacing() + 2 * self.document().documentMargin() + 6)
            self.setFixedHeight(height)
        self.pieces: list[Piece] = []
        self.anchor = -1               # cursor position the ghost text belongs to
        self.marks_visible = True
        self.colours = colours(self.palette())   # follows the theme: see changeEvent
        self.spelling = None                     # a SpellHighlighter once check_spelling() is called
        self._internal = False
        self._handling: int | None = None   # edits seen while Qt handles a key or click (see _handle)
        self._hit_rects: list[tuple[QRect, Piece]] = []
        self.setMouseTracking(True)
        self.document().contentsChange.connect(self._on_contents_change)
        self.cursorPositionChanged.connect(self._on_cursor_moved)

    # ------------------------------------------------------------ ghost state

    @property
    def ghost_text(self) -> str:
        return "".join(p.text for p in self.pieces)

    def has_ghost(self) -> bool:
        return bool(self.pieces) and self.anchor == self.textCursor().position()

    def start_ghost(self) -> None:
        """A new suggestion begins at the cursor."""
        self.pieces = []
        self.anchor = self.textCursor().position()
        self.viewport().update()

    def add_ghost(self, piece: Piece) -> None:
        if self.anchor != self.textCursor().position():
            return                      # the cursor moved: this suggestion is stale
        if self.single_line and "\n" in piece.text:
            piece = replace(piece, text=piece.text.split("\n", 1)[0])
        if self.pieces and self.pieces[-1].source == piece.source == "model":
            self.pieces[-1] = replace(self.pieces[-1], text=self.pieces[-1].text + piece.text)
        elif piece.text:
            self.pieces.append(piece)
        self.viewport().update()

    def clear_ghost(self) -> None:
        if self.pieces:
            self.pieces = []
            self.viewport().update()
        self.anchor = -1

    def text_before_cursor(self) -> str:
        return self.text_before(self.textCursor().position())

    def text_before(self, position: int) -> str:
        """The document's text before Qt's *position* (a cursor's or an anchor's)."""
        text = self.toPlainText()
        return text[: py_index(text, position)]

    def cursor_at_line_end(self) -> bool:
        cursor = self.textCursor()
        return cursor.atBlockEnd() and not cursor.hasSelection()

    # ------------------------------------------------------------ accepting

    def accept_ghost(self, upto: int | None = None) -> list[Piece]:
        """Insert the first *upto* characters of the ghost text (all by default)."""
        if not self.has_ghost():
            return []
        total = len(self.ghost_text)
        taken, rest = self._split(total if upto is None else min(upto, total))
        self._internal = True
        try:
            cursor = self.textCursor()
            cursor.beginEditBlock()
            for p in taken:
                cursor.insertText(p.text, self._format_for(p))
            cursor.endEditBlock()
            cursor.setCharFormat(QTextCharFormat())
            self.setTextCursor(cursor)
            self.setCurrentCharFormat(QTextCharFormat())
        finally:
            self._internal = False
        self.pieces = rest
        self.anchor = self.textCursor().position() if rest else -1
        self.viewport().update()
        self.accepted.emit(taken)
        return taken

    def accept_next_word(self) -> list[Piece]:
        """Ctrl+Right: the next word of the suggestion with the space before it; a suggestion that is
        only spaces so far has no word to take yet."""
        m = _NEXT_WORD.match(self.ghost_text)
        return self.accept_ghost(m.end()) if m else []

    def _format_for(self, piece: Piece) -> QTextCharFormat:
        fmt = QTextCharFormat()
        fmt.setProperty(NOT_TYPED, True)
        if piece.from_chunk:
            fmt.setProperty(CHUNK_ID, piece.chunk_id)
            fmt.setProperty(CHUNK_LABEL, piece.label or piece.kind or "chunk")
            if self.marks_visible:
                fmt.setBackground(self.colours.mark_background)
        return fmt

    def not_typed_ranges(self) -> list[tuple[int, int]]:
        """(start, end) of text the user did not type: accepted suggestions, pastes, a restored autosave;
        Python indices into ``toPlainText()``, as the engine reads them."""
        text = self.toPlainText()
        return [(py_index(text, frag.position()), py_index(text, frag.position() + frag.length()))
                for frag in self._fragments(NOT_TYPED)]

    def mark_not_typed(self) -> None:
        """Mark everything now in the document as not typed here (a restored autosave)."""
        cursor = QTextCursor(self.document())
        cursor.select(QTextCursor.Document)
        fmt = QTextCharFormat()
        fmt.setProperty(NOT_TYPED, True)
        cursor.mergeCharFormat(fmt)

    def insertFromMimeData(self, source) -> None:
        """A paste is not typing: mark it so learning does not take its values as typed by hand."""
        if not source.hasText():
            return super().insertFromMimeData(source)
        fmt = QTextCharFormat()
        fmt.setProperty(NOT_TYPED, True)
        cursor = self.textCursor()
        cursor.insertText(source.text(), fmt)
        self.setTextCursor(cursor)
        self.setCurrentCharFormat(QTextCharFormat())

    def _fragments(self, prop: int):
        """The document's text fragments whose format carries *prop*."""
        block = self.document().begin()
        while block.isValid():
            it = block.begin()
            while not it.atEnd():
                frag = it.fragment()
                if frag.isValid() and frag.charFormat().hasProperty(prop):
                    yield frag
                it += 1
            block = block.next()

    def _chunk_fragments(self):
        """(position, length, chunk id) of every run of accepted chunk text."""
        for frag in self._fragments(CHUNK_ID):
            yield frag.position(), frag.length(), int(frag.charFormat().property(CHUNK_ID))

    def set_marks_visible(self, visible: bool) -> None:
        """Show or hide the tint on accepted chunk text (the marks themselves stay)."""
        self.marks_visible = visible
        fmt = QTextCharFormat()
        fmt.setBackground(self.colours.mark_background if visible else self.palette().color(QPalette.Base))
        self._internal = True
        try:
            for position, length, _ in list(self._chunk_fragments()):
                cursor = QTextCursor(self.document())
                cursor.setPosition(position)
                cursor.setPosition(position + length, QTextCursor.KeepAnchor)
                cursor.mergeCharFormat(fmt)
        finally:
            self._internal = False

    def chunk_marks(self) -> list[tuple[int, int, int]]:
        """(start, end, chunk id) of accepted chunk text in the document."""
        return [(p, p + n, cid) for p, n, cid in self._chunk_fragments()]

    def labelled_marks(self) -> list[list]:
        """[start, end, chunk id, label] of accepted chunk text: what an autosave keeps."""
        return [[p, p + n, int(f.property(CHUNK_ID)), str(f.property(CHUNK_LABEL) or "chunk")]
                for frag in self._fragments(CHUNK_ID)
                for p, n, f in [(frag.position(), frag.length(), frag.charFormat())]]

    def restore_marks(self, marks: list[list]) -> None:
        """Mark library text again after a restored autosave (issue 14.17); marks past the text are dropped."""
        end = self.document().characterCount() - 1
        self._internal = True
        try:
            for start, stop, chunk_id, label in marks:
                if not 0 <= start < stop <= end:
                    continue
                fmt = QTextCharFormat()
                fmt.setProperty(CHUNK_ID, chunk_id)
                fmt.setProperty(CHUNK_LABEL, label)
                if self.marks_visible:
                    fmt.setBackground(self.colours.mark_background)
                cursor = QTextCursor(self.document())
                cursor.setPosition(start)
                cursor.setPosition(stop, QTextCursor.KeepAnchor)
                cursor.mergeCharFormat(fmt)
        finally:
            self._internal = False

    # ------------------------------------------------------------ keys

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if self.has_ghost():
            key, mods = event.key(), event.modifiers()
            if key == Qt.Key_Tab and mods in (Qt.NoModifier, Qt.KeypadModifier):
                self.accept_ghost()
                return
            if key == Qt.Key_Right and mods & Qt.ControlModifier:
                self.accept_next_word()
                return
            if key == Qt.Key_Escape:
                self.last_dismissed = list(self.pieces)      # what was turned down, for learning
                self.clear_ghost()
                self.dismissed.emit()
                return
            typed = event.text()
            if typed and typed.isprintable() and self.ghost_text.startswith(typed) and not (
                    mods & (Qt.ControlModifier | Qt.AltModifier)):
                rest_pieces = self._split(len(typed))[1]
                # Move the ghost first, so the cursor move it causes is not taken as a jump away.
                self.pieces = rest_pieces
                self.anchor = self.textCursor().position() + qt_len(typed)
                self._internal = True
                try:
                    super().keyPressEvent(event)
                finally:
                    self._internal = False
                if not rest_pieces:
                    self.anchor = -1
                self.viewport().update()
                return
            if key not in (Qt.Key_Shift, Qt.Key_Control, Qt.Key_Alt, Qt.Key_Meta):
                first = self.pieces[0]
                if typed and typed.isprintable() and first.from_chunk and not (
                        mods & (Qt.ControlModifier | Qt.AltModifier)):
                    self.typed_over.emit(first.chunk_id, self.text_before_cursor())
                self.clear_ghost()
                self._handle(lambda: super(GhostTextEdit, self).keyPressEvent(event))
                return
        elif self.single_line and event.key() in (Qt.Key_Return, Qt.Key_Enter):
            self.focusNextChild()
            return
        elif (not self.single_line and event.key() == Qt.Key_Tab
              and event.modifiers() in (Qt.NoModifier, Qt.KeypadModifier)):
            self.tab_waiting.emit()    # the window takes the suggestion when it comes, if one is on its way
            return
        super().keyPressEvent(event)

    def _split(self, n: int) -> tuple[list[Piece], list[Piece]]:
        """The ghost pieces cut after *n* characters: (first part, rest), sources kept."""
        return split_pieces(self.pieces, n)

    def _handle(self, qt_default) -> None:
        """Let Qt handle a key or click that dropped the suggestion, then say once what it did:
        ``edited`` if it changed the text, else ``interrupted``."""
        self._handling = 0
        try:
            qt_default()
        finally:
            edits, self._handling = self._handling, None
        (self.edited if edits else self.interrupted).emit()

    def _on_contents_change(self, position: int, removed: int, added: int) -> None:
        if self._internal or not (removed or added):
            return
        if self._handling is not None:
            self._handling += 1             # said once, when the key or click is handled
        else:
            self.edited.emit()

    def _on_cursor_moved(self) -> None:
        """The cursor left the suggestion's place some other way (the window moved it, a drag): drop it.
        The spell check follows it (the word being typed is not underlined)."""
        if self.spelling is not None:
            self.spelling.follow_cursor(self.textCursor())
        if self.pieces and self.anchor != self.textCursor().position() and not self._internal \
                and self._handling is None:
            self.clear_ghost()
            self.interrupted.emit()

    def mousePressEvent(self, event) -> None:
        if self.pieces:
            self.clear_ghost()
            self._handle(lambda: super(GhostTextEdit, self).mousePressEvent(event))
            return
        super().mousePressEvent(event)

    # ------------------------------------------------------------ spelling

    def check_spelling(self, speller, enabled: bool = True) -> None:
        """Underline misspelled words of the document (never the ghost text, which is not in it)."""
        from .spelling import SpellHighlighter

        self.spelling = SpellHighlighter(self.document(), speller)
        self.spelling.set_enabled(enabled)

    def spelling_actions(self, cursor: QTextCursor) -> list[QAction]:
        """Corrections for the misspelled word at *cursor*, and "Add to dictionary"; [] if it is fine."""
        if self.spelling is None or not self.spelling.enabled:
            return []
        block = cursor.block()
        line = block.text()
        span = self.spelling.misspelled_at(line, py_index(line, cursor.position() - block.position()))
        if span is None:
            return []
        word = line[span[0]:span[1]]
        start = block.position() + qt_len(line[:span[0]])
        end = start + qt_len(word)
        actions = []
        for suggestion in self.spelling.speller.suggestions(word):
            action = QAction(suggestion, self)
            action.triggered.connect(lambda _=False, s=suggestion: self._replace(start, end, s))
            actions.append(action)
        if not actions:
            none = QAction("No suggestions", self)
            none.setEnabled(False)
            actions.append(none)
        add = QAction(f"Add “{word}” to dictionary", self)
        add.triggered.connect(lambda _=False: (self.spelling.speller.add(word), self.spelling.rehighlight()))
        return actions + [add]

    def _replace(self, start: int, end: int, text: str) -> None:
        cursor = QTextCursor(self.document())
        cursor.setPosition(start)
        cursor.setPosition(end, QTextCursor.KeepAnchor)
        cursor.insertText(text)

    def contextMenuEvent(self, event) -> None:
        menu = self.createStandardContextMenu(event.pos())
        actions = self.spelling_actions(self.cursorForPosition(event.pos()))
        if actions:
            first = menu.actions()[0] if menu.actions() else None
            menu.insertActions(first, actions)
            menu.insertSeparator(first)
        menu.exec(event.globalPos())
        menu.deleteLater()

    def changeEvent(self, event) -> None:
        """The desktop switched light/dark (or the palette changed): new colours, marks repainted."""
        super().changeEvent(event)
        if event.type() == QEvent.PaletteChange:
            self.colours = colours(self.palette())
            self.set_marks_visible(self.marks_visible)
            self.viewport().update()

    def focusOutEvent(self, event) -> None:
        # Opening a menu (Edit → Next suggestion) or a popup takes focus for a moment: the suggestion stays.
        if self.pieces and event.reason() not in (Qt.PopupFocusReason, Qt.MenuBarFocusReason):
            self.clear_ghost()
            self.interrupted.emit()
        super().focusOutEvent(event)

    # ------------------------------------------------------------ painting

    def paintEvent(self, event) -> None:
        super().paintEvent(event)
        self._hit_rects = []
        if not self.has_ghost():
            return
        painter = QPainter(self.viewport())
        try:
            self._paint_ghost(painter)
        finally:
            painter.end()

    def _ghost_layout(self) -> tuple[QTextLayout, list[QTextLayout.FormatRange], int, QPointF]:
        """The ghost text laid out by Qt as the document would lay it out once accepted: the cursor's
        paragraph up to the cursor (kept invisible: the editor draws it) plus the suggestion, with the
        paragraph's width, tab stops and font; so wrapping, tabs, bidi text and font fallback match.
        Returns the layout, its format ranges (chunk text highlighted), where the ghost text starts
        in it, and where to draw it."""
        cursor = self.textCursor()
        block = cursor.block()
        typed = block.text()[: py_index(block.text(), cursor.positionInBlock())]
        text = typed + "".join(p.text for p in self.pieces).replace("\n", "\u2028")   # a line break, same length
        layout = QTextLayout(text, self.font())
        layout.setTextOption(block.layout().textOption())
        hidden = QTextCharFormat()
        hidden.setForeground(QColor(Qt.transparent))
        formats, start = [self._format_range(0, qt_len(typed), hidden)], qt_len(typed)
        for piece in self.pieces:
            fmt = QTextCharFormat()
            fmt.setForeground(self.colours.chunk_text if piece.from_chunk else self.colours.ghost)
            if piece.from_chunk:
                fmt.setBackground(self.colours.chunk_background)
            formats.append(self._format_range(start, qt_len(piece.text), fmt))
            start += qt_len(piece.text)
        layout.setFormats(formats)
        first = block.layout().lineAt(0) if block.layout().lineCount() else None
        x, width = (first.x(), first.width()) if first else (self.document().documentMargin(), self.viewport().width())
        layout.beginLayout()
        y = 0.0
        while (line := layout.createLine()).isValid():
            line.setLineWidth(width)
            line.setPosition(QPointF(x, y))
            y += line.height()
        layout.endLayout()
        origin = self.blockBoundingGeometry(block).translated(self.contentOffset()).topLeft()
        return layout, formats, qt_len(typed), origin + block.layout().position()

    @staticmethod
    def _format_range(start: int, length: int, fmt: QTextCharFormat) -> QTextLayout.FormatRange:
        span = QTextLayout.FormatRange()                 # (PySide6 ignores keyword arguments here)
        span.start, span.length, span.format = start, length, fmt
        return span

    def _paint_ghost(self, painter: QPainter) -> None:
        layout, formats, start, origin = self._ghost_layout()
        layout.draw(painter, origin, formats)
        for piece in self.pieces:                        # where chunk text is, for its tooltip
            end = start + qt_len(piece.text)
            for i in range(layout.lineCount()) if piece.from_chunk else ():
                line = layout.lineAt(i)
                a, b = max(start, line.textStart()), min(end, line.textStart() + line.textLength())
                if a < b:
                    x1, x2 = line.cursorToX(a)[0], line.cursorToX(b)[0]
                    self._hit_rects.append((QRect(int(origin.x() + min(x1, x2)), int(origin.y() + line.y()),
                                                  int(abs(x2 - x1)) + 1, int(line.height())), piece))
            start = end

    def mouseMoveEvent(self, event) -> None:
        pos = event.position().toPoint() if hasattr(event, "position") else event.pos()
        for box, piece in self._hit_rects:
            if box.contains(pos):
                sim = f" (match {piece.match:.2f})" if piece.match is not None else ""
                what = kind_name(piece.kind) + (f": {piece.label}" if piece.label else "")
                QToolTip.showText(self.viewport().mapToGlobal(pos), f"From your library — {what}{sim}",
                                  self.viewport())
                break
        else:
            cursor = self.cursorForPosition(pos)
            fmt = cursor.charFormat()
            if fmt.hasProperty(CHUNK_LABEL):
                QToolTip.showText(self.viewport().mapToGlobal(pos),
                                  f"Inserted from your library: {fmt.property(CHUNK_LABEL)}", self.viewport())
        super().mouseMoveEvent(event)
