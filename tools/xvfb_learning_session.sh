#!/bin/bash
# Drive the real editor under Xvfb as a user would: type a phone number by hand, turn a chunk down, open the learned list.
set -x
source "$(dirname "$0")/xvfb_common.sh"
editor_with 99 xvfb-session-only entries <<'ENTRIES'
phone|+44 20 7946 0321|My phone number is; You can call me on
email|mara@nordhavn.co.uk|My email is; Email me at
ENTRIES
xdotool type --delay 60 "Hi Oskar,"
xdotool key Return Return
xdotool type --delay 60 "For anything urgent, ring me direct on +44 20 7946 0321 and I will come down."
sleep 3
xdotool key Return Return
xdotool type --delay 60 "For anything else, you can also email me at"
sleep 4
import -window root docs/img/editor-xvfb-learning.png
learned_list_shot docs/img/learned-xvfb.png
xvfb_stop
