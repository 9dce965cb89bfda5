#!/bin/bash
# Drive the real editor under Xvfb: the user types their email by hand after "I'm" (a lone word), later
# writes "I'm" again, and opens the learned list.  Nothing is learned from "I'm", so the email does not
# come back after every "I'm"; a phrase of two words ("loop me in at") is learned as before.
set -x
source "$(dirname "$0")/xvfb_common.sh"
editor_with 99 xvfb-session-only entries <<'ENTRIES'
name|Mara Lindqvist|My name is; Kind regards,
email|mara@nordhavn.co.uk|My email is; Email me at
ENTRIES
xdotool type --delay 60 "Hi Oskar,"
xdotool key Return Return
xdotool type --delay 60 "Can you cc me on that thread? I'm mara@nordhavn.co.uk if you lost it. And please loop me in at mara@nordhavn.co.uk too."
sleep 3
xdotool key Return Return
xdotool type --delay 60 "Sorry for the late reply, I'm"
sleep 5
import -window root docs/img/lone-word-xvfb-after-im.png
learned_list_shot docs/img/lone-word-xvfb-learned.png
xvfb_stop
