#!/bin/bash
# The editor under Xvfb with a personal library: a bare form label gets the user's address.
source "$(dirname "$0")/xvfb_common.sh"
xvfb_start 97
export PYTHON_KEYRING_BACKEND=keyring.backends.fail.Keyring
export CHUNKWISE_PASSPHRASE=xvfb-form-label
.venv/bin/python - <<'PY'
import json, os
from chunkwise.core import ChunkStore
profile = json.load(open("tests/data/pii_profile_paper.json"))
with ChunkStore(os.environ["CHUNKWISE_DB"]) as s:
    for field, entry in profile.items():
        if not field.startswith("_"):
            s.add_chunk(entry["value"], "pii", entry["contexts"][:4], label=field)
PY
app_start 40
window_focus
xdotool type --delay 50 "Hi Oskar,"
xdotool key Return Return
xdotool type --delay 50 "Thanks for the order confirmation."
xdotool key Return Return
xdotool type --delay 50 "Billing address:"
sleep 6
import -window root docs/img/form-label-xvfb.png
xvfb_stop
