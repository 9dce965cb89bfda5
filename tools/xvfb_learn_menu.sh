#!/bin/bash
# Tools -> Learn from my writing… from the menu, as a user does: the file dialog opens, the persona's
# sent mail is chosen in it by typing, learning runs with its progress, and the status bar reports it.
set -x
source "$(dirname "$0")/xvfb_common.sh"
editor_with 97 xvfb-learn-menu mara
MAIL=$T/sent
mkdir -p "$MAIL"
cp bench/data/personas/mara/sent-*.txt "$MAIL"/
learn_menu_open
import -window root docs/img/learn-menu-dialog-xvfb.png
learn_menu_choose "$MAIL"
sleep 8
import -window root docs/img/learn-menu-progress-xvfb.png

mkdir -p $T/shots                               # learning 16 emails: a minute or two on two cores
for i in $(seq -w 1 50); do                     # the status bar's report shows for 10 s: a shot every 4 s
    import -window root -crop 820x30+0+572 $T/shots/$i.png
    sleep 4
done
last=$(ls $T/shots/*.png | tail -1)             # the bar at rest: "library ready" alone
for shot in $(ls -r $T/shots/*.png); do         # the last shot that differs from it: the report
    if ! cmp -s <(convert $shot rgb:-) <(convert $last rgb:-); then cp $shot docs/img/learn-menu-done-xvfb.png; break; fi
done
xvfb_stop
.venv/bin/python - <<'PY'
import os
from chunkwise.core import ChunkStore
with ChunkStore(os.environ["CHUNKWISE_DB"]) as s:
    print("mined chunks in the store:", len(s.list_chunks(kind="teacher")))
PY
