# Shared by tools/xvfb_*.sh: a private X display, a private data folder, the editor started in it.
#   source "$(dirname "$0")/xvfb_common.sh"; xvfb_start 99; ... app_start; window_focus; ...; xvfb_stop
# Each script seeds its own library (or none) between xvfb_start and app_start.

xvfb_start() {          # $1: display number. Sets DISPLAY, XPID, T (the data folder) and the env the app reads.
    export DISPLAY=:$1
    Xvfb :$1 -screen 0 1200x800x24 >/dev/null 2>&1 &
    XPID=$!
    sleep 2
    T=$(mktemp -d)
    export CHUNKWISE_DB=$T/chunks.db CHUNKWISE_CONFIG=$T/settings.json XDG_DATA_HOME=$T/data
    cd "$(dirname "${BASH_SOURCE[0]}")/.."
}

seed_persona() {        # $1: a persona of bench/data/personas; their day-one library goes into the private store.
    .venv/bin/python - "$1" <<'PY'
import json, os, sys
from chunkwise.core import ChunkStore
profile = json.load(open("bench/data/personas/profiles.json"))[sys.argv[1]]
with ChunkStore(os.environ["CHUNKWISE_DB"]) as s:
    for field, entry in profile.items():
        s.add_chunk(entry["value"], "pii", entry["contexts"], label=field.replace("_", " "))
PY
}

# Lines "label|value|context; context" on stdin go into the private store as personal details (a fourth
# part, "|snippet", stores a snippet instead).
seed_entries() {
    .venv/bin/python -c '
import os, sys
from chunkwise.core import ChunkStore
with ChunkStore(os.environ["CHUNKWISE_DB"]) as s:
    for line in filter(str.strip, sys.stdin):
        label, value, contexts, *kind = line.rstrip("\n").split("|")
        s.add_chunk(value, kind[0] if kind else "pii", [c.strip() for c in contexts.split(";")], label=label)
'
}

seed_paper_profile() {  # the paper's PII profile (tests/data/pii_profile_paper.json), four contexts a field.
    .venv/bin/python - <<'PY'
import json, os
from chunkwise.core import ChunkStore
profile = json.load(open("tests/data/pii_profile_paper.json"))
with ChunkStore(os.environ["CHUNKWISE_DB"]) as s:
    for field, entry in profile.items():
        if not field.startswith("_"):
            s.add_chunk(entry["value"], "pii", entry["contexts"][:4], label=field)
PY
}

editor_with() {         # $1: display, $2: passphrase, $3: a persona whose day-one library is seeded,
    xvfb_start "$1"     # "paper" for the paper's profile, "entries" for seed_entries' lines on stdin, or
    export PYTHON_KEYRING_BACKEND=keyring.backends.fail.Keyring     # none.  The editor started on a
    export CHUNKWISE_PASSPHRASE=$2                                  # private display and store, its body focused.
    if [ "$3" = paper ]; then seed_paper_profile; elif [ "$3" = entries ]; then seed_entries
    elif [ -n "$3" ]; then seed_persona "$3"; fi
    app_start 40
    window_focus
}

learn_menu_open() {     # Tools -> Learn from my writing… from the menu, as a user does: its file dialog opens.
    xdotool key alt+t
    sleep 1
    xdotool key m                                   # Learn from &my writing…
    sleep 3
}

learn_menu_choose() {   # $1: a folder; every .txt file in it chosen in the open file dialog by typing, and learned.
    xdotool type --delay 30 "$1/"
    xdotool key Return                              # into the folder
    sleep 2
    xdotool key ctrl+a                              # the name field: every file in it
    xdotool type --delay 20 "$(cd "$1" && printf '"%s" ' *.txt)"
    xdotool key Return
}

app_start() {           # $1: seconds to wait for the window (model loading). Sets APP.
    .venv/bin/python main.py > $T/app.log 2>&1 &
    APP=$!
    sleep "${1:-25}"
}

window_focus() {        # the editor's window, focused, the body clicked. Sets WID.
    WID=$(xdotool search --name "Chunkwise" | head -1)
    xdotool windowactivate --sync $WID; xdotool windowfocus $WID
    xdotool mousemove 500 400 click 1
}

learned_list_shot() {   # $1: a screenshot path. Esc on the suggestion, Tools -> What Chunkwise learned…, shot, closed.
    xdotool key Escape; sleep 2
    xdotool key alt+t; sleep 1
    xdotool key n; sleep 3
    import -window root "$1"
    xdotool key Escape; sleep 1
}

xvfb_stop() {
    kill $APP; sleep 1; kill $XPID
    tail -5 $T/app.log
}
