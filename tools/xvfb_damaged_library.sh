#!/bin/bash
# Drive the real editor under Xvfb with a library it cannot read (issue 12): a store cut short, then
# one written by a newer Chunkwise. The editor starts, says why in the status bar's tooltip, and
# suggests from the model alone; the file is left as it was.
set -x
source "$(dirname "$0")/xvfb_common.sh"
xvfb_start 97
export CHUNKWISE_PASSPHRASE=xvfb-session-only
for trouble in cut-short newer-schema; do
    rm -rf $T/chunks.db* $T/data        # a fresh library file, and no draft kept from the run before
    TROUBLE=$trouble .venv/bin/python - <<'PY'
import os
from chunkwise.core import ChunkStore
path = os.environ["CHUNKWISE_DB"]
with ChunkStore(path) as s:
    s.add_chunk("+44 20 7946 0321", "pii", ["My phone number is", "You can call me on"], label="phone")
    if os.environ["TROUBLE"] == "newer-schema":
        s.db.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
        s.db.conn.commit()
if os.environ["TROUBLE"] == "cut-short":
    data = open(path, "rb").read()
    open(path, "wb").write(data[:1000])
PY
    before=$(sha256sum $T/chunks.db | cut -d' ' -f1)
    app_start 12
    window_focus
    xdotool type --delay 60 "Hi Oskar,"
    xdotool key Return Return
    xdotool type --delay 60 "Thanks for the update. I will"
    sleep 6
    xdotool mousemove 700 587              # hover the status bar's library note: its tooltip says why
    sleep 3
    import -window root docs/img/damaged-$trouble-xvfb.png
    kill $APP; sleep 2
    after=$(sha256sum $T/chunks.db | cut -d' ' -f1)
    [ "$before" = "$after" ] && echo "$trouble: the store file is unchanged" || echo "$trouble: THE STORE FILE CHANGED"
done
kill $XPID
tail -5 $T/app.log
