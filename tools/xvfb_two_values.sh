#!/bin/bash
# The editor under Xvfb with a library that holds a work and a personal email: after "For anything
# private, my personal email is" the personal one comes, highlighted (ChunkMatcher.which_of), and the
# status bar names the work email one Alt+] away; Alt+] shows it (docs/img/two-values-xvfb.png,
# docs/img/two-values-alt-xvfb.png).
source "$(dirname "$0")/xvfb_common.sh"
xvfb_start 96
export HOME=$T PYTHON_KEYRING_BACKEND=keyring.backends.fail.Keyring CHUNKWISE_PASSPHRASE=xvfb-session-only
.venv/bin/python - <<'PY'
import os
from chunkwise.core import ChunkStore
with ChunkStore(os.environ["CHUNKWISE_DB"]) as s:
    s.add_chunk("ana.marin@northwind.com", "pii", ["My work email is", "At the office, email me at"], label="work email")
    s.add_chunk("ana.m.1988@gmail.com", "pii", ["My personal email is", "For private things, email me at"], label="personal email")
PY
app_start 40
window_focus
xdotool type --delay 50 "Hi Tom,"
xdotool key Return Return
xdotool type --delay 50 "For anything private, my personal email is"
sleep 12
import -window root docs/img/two-values-xvfb.png
xdotool key alt+bracketright
sleep 1
import -window root docs/img/two-values-alt-xvfb.png
xvfb_stop
