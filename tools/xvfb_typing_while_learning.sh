#!/bin/bash
# Typing while Tools -> Learn from my writing… runs: the progress bar shows, and suggestions still come
# (the model answers the newest request between two of the emails it reads).
set -x
source "$(dirname "$0")/xvfb_common.sh"
editor_with 95 xvfb-typing-while-learning mara
MAIL=$T/sent
mkdir -p "$MAIL"
for copy in 1 2 3; do                           # 48 emails: learning lasts long enough to type during it
    for f in bench/data/personas/mara/sent-*.txt; do cp "$f" "$MAIL/$copy-$(basename "$f")"; done
done
learn_menu_open
learn_menu_choose "$MAIL"
sleep 4
window_focus
xdotool type --delay 60 "Hi Oskar,"
xdotool key Return Return
xdotool type --delay 60 "Thanks for letting me know. I will"
sleep 3
import -window root docs/img/typing-while-learning-xvfb.png
xvfb_stop
