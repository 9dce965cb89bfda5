"""Drop training fragments whose last line is near a case of any bench/data set (used on slot_training_8b.json).

Near: the same last line (words, lower-cased), the same last four words, one last line inside the
other (four words or more), or half of their distinct words shared.

    python bench/data/tried/near_cases.py RAW.json [OUT.json]    # prints what it drops; writes OUT

slot_training_8b-raw.json is the helper's batch as written; slot_training_8b.json is what this left
(114 dropped) less three fragments that echoed the brief's own examples, as trained on.
"""
import json, re, glob, sys
from pathlib import Path
root = str(Path(__file__).resolve().parents[1])     # bench/data
def strings(o):
    if isinstance(o, str): yield o
    elif isinstance(o, dict):
        for v in o.values(): yield from strings(v)
    elif isinstance(o, list):
        for v in o: yield from strings(v)
cases = set()
for f in glob.glob(root + '/**/*.json', recursive=True):
    if '/tried/' in f: continue
    for s in strings(json.load(open(f))):
        if len(s) >= 6: cases.add(s)
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from bench.common import last_line_words, near_line     # the rule, shared with bench/cli_profile.py
case_lines = []
for c in cases:
    w = last_line_words(c)
    if w: case_lines.append((w, set(w), c))
def near(frag): return near_line(frag, case_lines)
path = sys.argv[1]
d = json.load(open(path))
removed = []
def keep(lst):
    out = []
    for t in lst:
        c = near(t)
        if c is None: out.append(t)
        else: removed.append((t, c))
    return out
d['fields'] = {k: keep(v) for k, v in d['fields'].items()}
d['third_party'] = keep(d['third_party']); d['neutral'] = keep(d['neutral'])
for t, c in removed: print(repr(t[-70:]), '  <~>  ', repr(c[-70:]))
print(len(removed), 'removed', len(cases), 'case strings')
if len(sys.argv) > 2:
    d['_about'] += f" {len(removed)} fragments whose last line is near a case's in bench/data (equal, same last four words, one inside the other, or half their words shared) were removed before training."
    json.dump(d, open(sys.argv[2], 'w'), ensure_ascii=False, indent=1)
