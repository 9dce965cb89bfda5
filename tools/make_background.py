"""Regenerate core/data/background_emails.txt: generic email text, no personal data.

The matcher whitens hidden states with statistics of ordinary text (see
core/matching.py).  This script writes that text by sampling the default model
on a list of everyday email-writing instructions.  Run:

    python tools/make_background.py
"""
import sys
from pathlib import Path

from llama_cpp import Llama

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from chunkwise.core.paths import bundled_model_path  # noqa: E402

TOPICS = [
    "thank a colleague for help with a project", "ask a manager for a day off next Friday",
    "reschedule a meeting to next week", "follow up on an unpaid invoice", "invite the team to a lunch",
    "apologise for a late reply", "ask a professor about a research position", "welcome a new employee",
    "share the minutes of a meeting", "request feedback on a draft report", "congratulate a friend on a new job",
    "complain politely about a delayed order", "ask a landlord to fix the heating", "confirm a hotel booking",
    "announce an office move", "remind a client about a deadline", "decline an invitation to a conference",
    "ask for a recommendation letter", "introduce two colleagues to each other", "summarise a product launch",
    "ask a supplier for a price quote", "thank a customer for their order", "propose a new marketing idea",
    "update the team on a project delay", "ask a neighbour to water the plants", "plan a birthday surprise",
    "request access to a shared folder", "report a bug in a website", "ask for a refund", "say goodbye to a team",
]


def main() -> None:
    llm = Llama(model_path=str(bundled_model_path()), n_ctx=1024, n_threads=2, verbose=False, seed=7)
    out = []
    for topic in TOPICS:
        res = llm.create_chat_completion(
            messages=[{"role": "user", "content": f"Write a short email to {topic}."}],
            max_tokens=160, temperature=0.8, top_p=0.95)
        text = res["choices"][0]["message"]["content"].strip()
        out.append(text.replace("\r", ""))
    path = Path(__file__).resolve().parents[1] / "core" / "data" / "background_emails.txt"
    path.write_text("\n\n".join(out) + "\n", encoding="utf-8")
    print(f"wrote {path} ({sum(len(t) for t in out)} characters)")


if __name__ == "__main__":
    main()
