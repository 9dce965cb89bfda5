"""What kind of thing the writer is about to write: their own phone number, email, address... or nothing personal.

Matching a chunk's stored contexts alone does not carry a 135M model to phrasings
nobody stored ("Text me whenever:" shares no context with "My phone number is";
docs/matching.md measures it).  A *slot classifier* reads the model's own state
at the cursor (whitened final state and local vector, the same features the
chunk index uses) and says which field, if any, comes next, and whether it is
the writer's own or someone else's:

    classes: one per field type in core/data/slot_training*.json (phone, email, address, name, company, ...,
             and kinds of snippet sentence: availability, closing_line, introduction, directions),
             plus "third_party" (someone else's detail, a time, a place) and "none" (ordinary text)

It is a multinomial logistic regression trained once per model on that shipped,
independently written corpus, plus ordinary text positions of the background
emails as "none".  A user's chunk gets a field-type distribution by classifying
its *own* stored contexts, so labels and value formats need no rules:
"Bank details:" makes a chunk an IBAN because the model's state there looks
like the states of IBAN lead-ins.

>>> SlotClassifier.fit(np.eye(3), np.array([0, 1, 2]), ["a", "b", "none"]).predict(np.eye(3)).argmax(1).tolist()
[0, 1, 2]
"""
from __future__ import annotations

import hashlib
import json
import random
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from .details import find_details
from .encoding import BACKGROUND_FILE, LOCAL_WINDOW, ModelStats, local_mean, local_rows
from .llama_runtime import LlamaRuntime
from .paths import shipped_for_model
from .text import current_sentence, label_line, words

TRAINING_FILE = BACKGROUND_FILE.parent / "slot_training.json"
# Seven batches written independently (by different authors, none seeing the evaluation data or the
# other batches; the third and fifth to seventh were commissioned after evaluation runs, and any
# fragment whose last line matches the last line of a bench/data/personal case was removed from
# them).  The fourth and seventh add the kinds of snippet sentence people keep (availability,
# closing line, introduction, directions): a snippet whose stored contexts read as one of them is
# typed like a phone number is.  The sixth spreads every field over registers and forms (bare
# labels, signature blocks, indirect requests, non-native phrasing).
TRAINING_FILES = (TRAINING_FILE, *(BACKGROUND_FILE.parent / f"slot_training_{i}.json" for i in range(2, 8)))
SLOTS_VERSION = 2        # 2: every fragment also read alone after BOS (first_line_features)
NONE, THIRD_PARTY = "none", "third_party"
# The kinds of snippet sentence (slot_training_4.json, slot_training_7.json): what comes there is a
# sentence the model may well write itself, not a value only the user knows.
SENTENCE_KINDS = frozenset({"availability", "closing_line", "introduction", "directions"})
PACK_TOKENS = 448        # training fragments are packed into passes of about this many tokens
L2 = 1e-4                # weight decay of the logistic regression
EPOCHS = 800
BOW_DIM = 4096           # hashed words of the sentence being written
BOW_WEIGHT = 2.0         # words against the model's state (chosen on the dev split of bench/personal.py)


def source_id() -> str:
    """What a trained classifier depends on besides the model: this code's version and the corpus."""
    data = b"".join(f.read_bytes() for f in TRAINING_FILES if f.exists())
    return (f"slots-v{SLOTS_VERSION}:{LOCAL_WINDOW}:{BOW_DIM}:{BOW_WEIGHT}:{L2}:{EPOCHS}:"
            f"{hashlib.sha1(data).hexdigest()[:12]}")


def training_items() -> list[tuple[str, str]]:
    """(text, class) pairs from the shipped corpus (core/data/slot_training*.json)."""
    items = []
    for path in TRAINING_FILES:
        if not path.exists():
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        items += [(t, field) for field, texts in data["fields"].items() for t in texts]
        items += [(t, THIRD_PARTY) for t in data.get("third_party", [])]
        items += [(t, NONE) for t in data.get("neutral", [])]
    return items


@dataclass
class SlotClassifier:
    """Softmax regression over whitened [state, local] features (2d,) -> class probabilities."""

    classes: list[str]
    weights: np.ndarray      # (C, 2d)
    bias: np.ndarray         # (C,)

    @property
    def fields(self) -> list[str]:
        return [c for c in self.classes if c not in (NONE, THIRD_PARTY)]

    def predict_one(self, whitened: np.ndarray, text: str) -> np.ndarray:
        """``predict(features(...))`` for one step, without building the 4,096 word columns: the
        dense part reads only the state's weights and the words only their own columns (the
        weights are cold after each forward pass, so bytes read are the cost).
        *whitened*: (2, d) state and local mean after ``stats.transform`` -> (C,) probabilities."""
        state_w, words_w = self._split(whitened.size)            # (C, 2d), (BOW_DIM, C)
        z = state_w @ whitened.reshape(-1).astype(np.float32) + self.bias        # (C,)
        slots = word_slots(text)
        if slots:
            z = z + (BOW_WEIGHT / np.sqrt(np.float32(len(slots)))) * words_w[slots].sum(axis=0)
        z = z - z.max()
        e = np.exp(z)
        return e / e.sum()

    def _split(self, dim: int) -> tuple[np.ndarray, np.ndarray]:
        """The weights of the state (C, dim) and of the words (BOW_DIM, C) in their own contiguous
        arrays, so a step reads a few kilobytes of word weights, not strided rows of all of them."""
        cached = getattr(self, "_split_cache", None)        # (weights it was cut from, state, words)
        if cached is None or cached[0] is not self.weights or cached[1].shape[1] != dim:
            cached = (self.weights, np.ascontiguousarray(self.weights[:, :dim], np.float32),
                      np.ascontiguousarray(self.weights[:, dim:].T, np.float32))
            self._split_cache = cached
        return cached[1], cached[2]

    def predict(self, features: np.ndarray) -> np.ndarray:
        """(n, 2d) -> (n, C) probabilities."""
        z = np.atleast_2d(features).astype(np.float32) @ self.weights.T + self.bias
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    @classmethod
    def fit(cls, x: np.ndarray, y: np.ndarray, classes: Sequence[str], epochs: int = EPOCHS,
            l2: float = L2) -> "SlotClassifier":
        """Full-batch gradient descent with Adam; classes weighted equally (balanced)."""
        n, d = x.shape
        c = len(classes)
        x = x.astype(np.float32)
        onehot = np.zeros((n, c), np.float32)
        onehot[np.arange(n), y] = 1.0
        counts = np.maximum(onehot.sum(0), 1.0)
        sample_w = (n / (c * counts))[y][:, None].astype(np.float32)
        w = np.zeros((c, d), np.float32)
        b = np.zeros(c, np.float32)
        m_w, v_w, m_b, v_b = (np.zeros_like(w), np.zeros_like(w), np.zeros_like(b), np.zeros_like(b))
        lr, beta1, beta2 = 0.05, 0.9, 0.999
        for step in range(1, epochs + 1):
            z = x @ w.T + b
            z -= z.max(axis=1, keepdims=True)
            p = np.exp(z)
            p /= p.sum(axis=1, keepdims=True)
            g = (p - onehot) * sample_w / n              # (n, c)
            gw = g.T @ x + l2 * w
            gb = g.sum(0)
            m_w = beta1 * m_w + (1 - beta1) * gw
            v_w = beta2 * v_w + (1 - beta2) * gw * gw
            m_b = beta1 * m_b + (1 - beta1) * gb
            v_b = beta2 * v_b + (1 - beta2) * gb * gb
            corr1, corr2 = 1 - beta1 ** step, 1 - beta2 ** step
            w -= lr * (m_w / corr1) / (np.sqrt(v_w / corr2) + 1e-8)
            b -= lr * (m_b / corr1) / (np.sqrt(v_b / corr2) + 1e-8)
        return cls(list(classes), w, b)

    # -- saving

    def to_bytes(self) -> tuple[str, bytes, bytes]:
        return json.dumps(self.classes), self.weights.astype(np.float32).tobytes(), self.bias.astype(np.float32).tobytes()

    @classmethod
    def from_bytes(cls, classes: str, weights: bytes, bias: bytes) -> "SlotClassifier":
        names = json.loads(classes)
        b = np.frombuffer(bias, dtype=np.float32).copy()
        w = np.frombuffer(weights, dtype=np.float32).reshape(len(names), -1).copy()
        return cls(names, w, b)


# The fields a value of each shape (core/details.py) can fill: a phone number is no calendar link or
# email address, an email address no website.  A chunk's field type is read from its stored
# contexts, which users phrase loosely ("Call me:" reads half as a time to call, "my email address"
# as much a postal address), so a value's own shape rules out what it cannot be (issue 10's wrong
# fields: the phone number where an email was asked for, the email where the website belongs).
SHAPE_FIELDS = {"phone": {"phone", "iban", "tax_id", "booking_reference", "postal_code", "date_of_birth"},
                "email": {"email"},
                "web": {"website", "github", "linkedin", "calendar_link", "social_handle"},
                "address": {"address", "postal_code"}}
SHAPE_COVERS = 0.6       # the share of a value its phone, email or web shape must cover to say what it is


def shape_fields(value: str) -> set[str] | None:
    r"""The fields *value*'s shape lets it fill; None where its shape says nothing: no shape (a name,
    a company, a reference -- the shapes are made to catch invented details, so a value they miss
    rules out nothing), more than one line (a signature block), or a phone number, email or web
    address that is only part of the value ("Call me Mon-Fri 9-5 on +49 ...").  A street address
    always leaves words unshaped ("..., Bristol BS3 4QT, United Kingdom"), so it counts whole.

    >>> sorted(shape_fields("ana.marin@posteo.de")), shape_fields("Ana Sofía Marín")
    (['email'], None)
    >>> "calendar_link" in shape_fields("(312) 555-0147"), "address" in shape_fields("Lindenstraße 42, 10969 Berlin")
    (False, True)
    >>> shape_fields("Best regards,\nAna\nwww.anamarin.de"), shape_fields("Call me Mon-Fri 9-5 on +49 151 2384 7712")
    (None, None)
    """
    value = value.strip()
    found = find_details(value)
    if not found or "\n" in value:
        return None
    shapes = {shape for shape, _start, _end in found}
    covered = len(set().union(*(range(start, end) for _shape, start, end in found)))
    if shapes != {"address"} and covered < SHAPE_COVERS * len(value):
        return None
    return set().union(*(SHAPE_FIELDS[s] for s in shapes))


# The fields a form label names by its last word, whatever the classifier reads: "Invoice address:"
# read as an email first (bench/entities.py dev), though in the classifier's own training fragments
# 38 of the 41 labels ending in "address" are postal ones and the other three "Email address:".
# Only last words those fragments use for one kind of detail (a postal address or its postcode; a
# "code" is many things, and a "number" is told by the word before it, number_label_fields), besides
# someone else's.
LABEL_FIELDS = {"address": {"address", "postal_code"}, "email": {"email"}, "e-mail": {"email"},
                "phone": {"phone"}, "mobile": {"phone"}, "tel": {"phone"}, "telephone": {"phone"},
                "iban": {"iban"}, "postcode": {"postal_code", "address"}, "zip": {"postal_code", "address"},
                "github": {"github"}, "linkedin": {"linkedin"}, "website": {"website"}, "web": {"website"}}
# A label ending in "number" (or "no.", "#"): a phone number after a word for a phone, one of the
# other numbers people keep after a word for one of those ("PO number:", "Booking no.:"), and open
# (None) after anything else ("Here's my number:").  Read as a draft's first line, "PO number:" took
# the user's phone (bench/personal.py dev, bench/out/personal-dev-first-line-before-gates.txt).
_NUMBER_WORDS = {"number", "no", "no.", "#", "nr", "nr."}
_PHONE_WORDS = {"phone", "mobile", "mob", "mob.", "cell", "cellphone", "tel", "tel.", "telephone", "ph", "ph.",
                "contact", "whatsapp", "landline", "fax", "callback", "direct", "work", "home", "office",
                "daytime", "evening", "emergency"}
OTHER_NUMBER_WORDS = {"po", "p.o.", "purchase", "order", "booking", "reservation", "confirmation", "account",
                       "acct", "invoice", "reference", "ref", "ref.", "tax", "vat", "customer", "client", "case",
                       "ticket", "tracking", "passport", "policy", "membership", "member", "flight", "room",
                       "serial", "registration", "id", "iban", "routing", "licence", "license", "insurance",
                       "claim", "student", "employee", "project", "job", "part", "model", "seat", "table"}
NUMBER_FIELDS = {"booking_reference", "tax_id", "iban"}      # the numbers people keep besides a phone's
# A word before "address" that makes it another kind ("Email address:", "Web address:"), or none of
# the user's fields ("IP address:", "Wallet address:").
_LABEL_QUALIFIERS = {"email": "email", "e-mail": "email", "web": "website", "ip": None, "mac": None,
                     "wallet": None, "bitcoin": None, "crypto": None, "server": None}


def label_fields(text: str) -> set[str] | None:
    """The fields the form label the text ends in names by its last word (LABEL_FIELDS), or, for a
    "number", by the words before it (:func:`number_label_fields`); None where the text ends in no
    label, or in one whose words name no single kind of field.

    >>> sorted(label_fields("Invoice address:")), label_fields("Email address:"), label_fields("Booking code:")
    (['address', 'postal_code'], {'email'}, None)
    >>> label_fields("Mobile number:"), "phone" in label_fields("Booking number:")      # number_label_fields
    ({'phone'}, False)
    >>> label_fields("Web or email address:"), label_fields("IP address:")
    ({'email'}, None)
    """
    words_ = label_words(text)
    if names_a_number(text):
        return number_label_fields(words_[:-1])
    if not words_ or words_[-1] not in LABEL_FIELDS:
        return None
    if words_[-1] == "address":
        for w in reversed(words_[:-1]):               # the nearest qualifier: "Web or email address:"
            if w in _LABEL_QUALIFIERS:
                kind = _LABEL_QUALIFIERS[w]
                return LABEL_FIELDS[kind] if kind is not None else None
    return LABEL_FIELDS[words_[-1]]


def number_label_fields(qualifiers: Sequence[str]) -> set[str] | None:
    """The fields a label ending in "number" names, by the words before it: a phone number after a
    word for a phone ("Mobile number:", "Work no.:"), one of the other numbers people keep after a
    word for one of those ("PO number:", "Booking number:"), None after anything else ("Here's my
    number:", "Number:"), which may be either.

    >>> number_label_fields(["mobile"]), sorted(number_label_fields(["po"])), number_label_fields(["here's", "my"])
    ({'phone'}, ['booking_reference', 'iban', 'tax_id'], None)
    """
    if any(w in _PHONE_WORDS for w in qualifiers):
        return {"phone"}
    return NUMBER_FIELDS if any(w in OTHER_NUMBER_WORDS for w in qualifiers) else None


def names_a_number(text: str) -> bool:
    """Whether the form label the text ends in ends with a word for a number ("PO number:", "Tel. no.:").

    >>> names_a_number("Booking number:"), names_a_number("Email address:")
    (True, False)
    """
    words_ = label_words(text)
    return bool(words_) and words_[-1] in _NUMBER_WORDS


# A qualifier in brackets at a label's end, which forms add to its field ("Personal website (optional):",
# "Phone (work):"): the field is named before it.
_LABEL_NOTE = re.compile(r"\s*\(([^()]*)\)\s*:\s*$")


def label_words(text: str) -> list[str]:
    """The words of the form label the text ends in (text.label_line), lower case, without its colon
    or a bracketed note at its end, unless the note names a field itself ("Address (email):" stays
    as it is, naming no single field); [] where the text ends in no label.

    >>> label_words("Hi,\\n\\nPersonal website (optional):"), label_words("Tel. no.:"), label_words("Call me on")
    (['personal', 'website'], ['tel.', 'no.'], [])
    >>> label_words("Address (email):")
    ['address', '(email)']
    """
    label = label_line(text) or ""
    note = _LABEL_NOTE.search(label)
    if note is not None and not set(note.group(1).lower().split()) & (set(LABEL_FIELDS) | _NUMBER_WORDS):
        label = label[: note.start()] + ":"
    return label.lower().replace(":", " ").split()


def word_slots(text: str) -> list[int]:
    """The hashed positions of *text*'s current sentence words, and of its last three words apart
    (distinct, ascending): where :func:`bag_of_words` puts its ones.

    >>> word_slots("Text me whenever:") == word_slots("text ME, whenever")     # words, not spelling
    True
    >>> len(word_slots("Text me whenever:"))                # 3 words, and the same 3 as the last three
    6
    """
    found = words(current_sentence(text))
    hashed = {zlib.crc32(w.encode()) % BOW_DIM for w in found}
    hashed |= {zlib.crc32(("last:" + w).encode()) % BOW_DIM for w in found[-3:]}
    return sorted(hashed)


def bag_of_words(texts: Sequence[str]) -> np.ndarray:
    """Hashed words of each text's current sentence, and of its last three words apart: (n, BOW_DIM), unit rows.

    >>> bag_of_words(["Text me whenever:"]).shape
    (1, 4096)
    """
    out = np.zeros((len(texts), BOW_DIM), np.float32)
    for i, text in enumerate(texts):
        slots = word_slots(text)
        if slots:
            out[i, slots] = 1.0 / np.sqrt(np.float32(len(slots)))
    return out


def shipped_path(identity: str) -> Path:
    return shipped_for_model("slots", identity)


def shipped(identity: str, source: str) -> tuple[str, bytes, bytes] | None:
    """The classifier trained for a bundled model and shipped with Chunkwise (tools/train_slots.py), if it fits."""
    path = shipped_path(identity)
    try:
        with np.load(path, allow_pickle=False) as data:
            if str(data["source"]) != source:
                return None
            weights = data["weights"].astype(np.float32)
            return str(data["classes"]), weights.tobytes(), data["bias"].astype(np.float32).tobytes()
    except (OSError, KeyError, ValueError):
        return None


def save_shipped(identity: str, source: str, clf: SlotClassifier) -> Path:
    path = shipped_path(identity)
    np.savez_compressed(path, source=np.array(source), classes=np.array(json.dumps(clf.classes)),
                        weights=clf.weights.astype(np.float16), bias=clf.bias.astype(np.float32))
    return path


def features(stats: ModelStats, hidden: np.ndarray, local: np.ndarray, texts: Sequence[str]) -> np.ndarray:
    """Whitened state and local vector, and the words: (n, d), (n, d), n texts -> (n, 2d + BOW_DIM).
    (At decode time ``SlotClassifier.predict_one`` computes the same from a step's whitened rows.)"""
    return np.hstack([stats.transform(hidden), stats.transform(local), BOW_WEIGHT * bag_of_words(texts)])


def fragment_tokens(rt: LlamaRuntime, text: str) -> list[int]:
    """A training fragment's tokens as both readings take them: trailing spaces off, the last 120."""
    return rt.tokenize(text.rstrip(" "), add_special=False)[-120:]


def text_features(rt: LlamaRuntime, stats: ModelStats, texts: Sequence[str],
                  progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """Features at the end of each text, evaluated in packed passes.

    Fragments are joined with blank lines into passes of about PACK_TOKENS
    tokens (an email's earlier paragraphs are context too), so a few hundred
    fragments cost a few dozen forward passes instead of one each.
    """
    sep = rt.tokenize("\n\n", add_special=False)
    order = list(range(len(texts)))
    random.Random(0).shuffle(order)          # neighbours in a pass come from any class
    texts = list(texts)
    hidden = np.zeros((len(texts), rt.n_embd), np.float32)
    local = np.zeros((len(texts), rt.n_embd), np.float32)
    done, batch, ends, owners = 0, [], [], []

    def flush() -> None:
        nonlocal batch, ends, owners
        if not batch:
            return
        rt.reset()
        out = rt.eval([rt.bos] + batch, outputs="all")                # hidden (1 + n, d)
        states = out.hidden[1:]
        for end, i in zip(ends, owners):
            hidden[i] = states[end]
            local[i] = local_mean(states, end)
        batch, ends, owners = [], [], []

    for i in order:
        toks = fragment_tokens(rt, texts[i])
        if batch and len(batch) + len(sep) + len(toks) > PACK_TOKENS:
            flush()
        if batch:
            batch += sep
        batch += toks
        ends.append(len(batch) - 1)
        owners.append(i)
        done += 1
        if progress and done % 50 == 0:
            progress(done, len(texts))
    flush()
    rt.reset()
    return features(stats, hidden, local, texts)


def first_line_features(rt: LlamaRuntime, stats: ModelStats, texts: Sequence[str],
                        progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """Features at the end of each text read alone after BOS, as the first words of a draft are.

    A draft that opens with "Phone:" puts the classifier's state a few tokens after BOS, where the
    packed passes of :func:`text_features` almost never put a training state; read only packed, such
    openings read as ordinary text ("Phone:" alone: none 0.42, phone 0.24; after "Hi Bob," phone 0.98).
    """
    hidden = np.zeros((len(texts), rt.n_embd), np.float32)
    local = np.zeros((len(texts), rt.n_embd), np.float32)
    for i, text in enumerate(texts):
        rt.reset()
        toks = fragment_tokens(rt, text)
        n = len(toks) + 1
        states = rt.eval([rt.bos] + toks, outputs=range(n - local_rows(n, first=1), n)).hidden   # (rows, d)
        hidden[i], local[i] = states[-1], local_mean(states)
        if progress and (i + 1) % 50 == 0:
            progress(i + 1, len(texts))
    rt.reset()
    return features(stats, hidden, local, texts)


def train(rt: LlamaRuntime, stats: ModelStats, progress: Callable[[int, int], None] | None = None) -> SlotClassifier:
    """Train the slot classifier for this model on the shipped corpus plus background text as "none"."""
    items = training_items()
    classes = sorted({c for _, c in items} - {NONE, THIRD_PARTY}) + [THIRD_PARTY, NONE]
    texts, n = [t for t, _ in items], len(items)
    # Every fragment twice: inside a packed pass (after earlier text) and alone (a draft's first line),
    # one progress bar over both readings.
    half = (lambda offset: (lambda done, _total: progress(offset + done, 2 * n))) if progress else (lambda offset: None)
    x = np.vstack([text_features(rt, stats, texts, half(0)), first_line_features(rt, stats, texts, half(n))])
    y = np.tile([classes.index(c) for _, c in items], 2)
    bg = np.tile(stats.background[:: 4], (2, 1))    # ordinary text positions (n, 2d), twice as the fragments are
    x = np.vstack([x, np.hstack([bg, np.zeros((len(bg), BOW_DIM), np.float32)])])
    y = np.concatenate([y, np.full(len(bg), classes.index(NONE))])
    return SlotClassifier.fit(x, y, classes)
